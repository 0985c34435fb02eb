import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startApi } from '../helpers/api';
import { childEnv } from '../helpers/env';
import { openaiText } from '../helpers/fake-provider';
import { atTeardown, getStack, OPERATOR_KEYS } from '../helpers/stack';

const root = path.join(__dirname, '..', '..');

/** The fenced shell blocks of the README's "## Try it" section, in order. */
function tryItBlocks(): string[] {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Try it\n');
  expect(start, 'a "## Try it" section').to.be.greaterThan(-1);
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next === -1 ? undefined : next);
  return [...section.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

describe('README: "Try it", run as pasted', function () {
  this.timeout(120_000);

  it('stores no key and no placeholder in the task, and ends its run `ready` against a service that has a key', async () => {
    const blocks = tryItBlocks();
    expect(blocks, 'shell blocks').to.have.length.greaterThan(0);
    const script = blocks.join('\n');
    expect(script, 'no literal key').not.to.match(/sk-\.\.\.|sk-…/);
    // The service as the README asks for it: with an operator key.
    const api = await startApi(OPERATOR_KEYS);
    const { fake, config } = getStack();
    fake.script(() => openaiText('Tides come and go'));
    atTeardown(async () => fake.reset());
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-readme-'));
    atTeardown(async () => fs.rmSync(empty, { recursive: true, force: true }));
    // A second terminal in the checkout: the session helper reaches the stack's database through MONGO_URL.
    const env = childEnv({ API: api.url, MONGO_URL: config.MONGO_URL, DEV_DATA_DIR: empty, XDG_CACHE_HOME: empty });
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { cwd: root, env, timeout: 90_000 }).catch((err) => {
      throw new Error(`the snippets failed (${err.code}):\n${err.stderr}\n${err.stdout}`);
    });
    // The last thing printed: the run's status and answer, as jq prints an object.
    const lines = stdout.trimEnd().split('\n');
    expect(JSON.parse(lines.slice(lines.lastIndexOf('{')).join('\n'))).to.deep.equal({ status: 'ready', answer: 'Tides come and go' });
    // The run used the service's key: the task carries none.
    expect(fake.requests.at(-1)!.headers.authorization).to.equal(`Bearer ${OPERATOR_KEYS.OPENAI_API_KEY}`);
  });
});
