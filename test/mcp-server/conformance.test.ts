import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { signedIn } from '../helpers/api';
import { startAuthProxy } from '../helpers/auth-proxy';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { lastUserText, openaiText, providerError } from '../helpers/fake-provider';
import { testEnv } from '../helpers/env';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');

/**
 * The server scenarios of `@modelcontextprotocol/conformance` that a server of task-backed tools can pass, the tools
 * they call being tasks (made in `before`). Those left out need what a task's run does not do (images, audio,
 * embedded resources, log messages on a tool's call, sampling, progress at set values, elicitation of set schemas) or
 * what this server does not serve (resources, prompts, completions).
 */
export const SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'json-schema-2020-12',
  'dns-rebinding-protection',
  'server-sse-polling',
  'server-sse-multiple-streams',
];

/** The suite's command line (its package's `bin`), or undefined when it is not installed. */
function conformanceBin(): string | undefined {
  const dir = path.join(root, 'node_modules', '@modelcontextprotocol', 'conformance');
  if (!fs.existsSync(path.join(dir, 'package.json'))) return undefined;
  const { bin } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: string | Record<string, string> };
  return path.join(dir, typeof bin === 'string' ? bin : Object.values(bin)[0]!);
}

/** Node 24 (the suite needs Node ≥ 22): NODE24 as scripts/test.sh exports it, else scripts/install-node.sh's. */
async function node24(): Promise<string> {
  if (testEnv.node24) return testEnv.node24;
  const { stdout } = await run('bash', [path.join(root, 'scripts', 'install-node.sh')], { cwd: root });
  const found = /^NODE24=(.+)$/m.exec(stdout)?.[1];
  if (!found) throw new Error(`scripts/install-node.sh printed no NODE24: ${stdout}`);
  return found;
}

describe('MCP server: the conformance suite\'s server scenarios (Node 24, through a loopback proxy adding Authorization)', function () {
  this.timeout(120_000);
  const bin = conformanceBin();
  let url: string;
  let node: string;

  before(async function () {
    if (!bin) {
      console.log('      @modelcontextprotocol/conformance is not installed: skipped');
      this.skip();
    }
    node = await node24();
    const me = await signedIn('conformance');
    await createTask(me.api, 'default', 'greet');
    // Tools some scenarios look for, as tasks: one declaring the schema json-schema-2020-12 checks is kept as given,
    // one server-sse-polling calls (a run: its answer stream opens with a priming event and a retry).
    const declared = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    };
    const saved = await me.api.put('/api/tasks/~/default/json_schema_2020_12_tool', { provider: 'openai', model: 'test-model', prompt: 'Hi {{ name }}', settings: { key: 'sk-test-key-0123456789abcdef' }, description: 'Tool with JSON Schema 2020-12 features', input_schema: declared });
    expect(saved.status, saved.text).to.equal(201);
    await createTask(me.api, 'default', 'test_reconnection', { prompt: 'Reconnect' });
    // A run that answers text, and one that ends in error (its provider refuses the key): tools-call-*.
    await createTask(me.api, 'default', 'test_simple_text', { prompt: 'Simple' });
    await createTask(me.api, 'default', 'test_error_handling', { prompt: 'Fail' });
    getStack().fake.script((req) => (lastUserText(req) === 'Fail' ? providerError('openai', 401, 'invalid key') : openaiText(`answered: ${lastUserText(req)}`)));
    const proxy = await startAuthProxy(getStack().apiUrl, `Bearer ${me.sessionId}`);
    url = `${proxy.url}/mcp`;
  });

  for (const scenario of SCENARIOS) {
    it(`passes ${scenario} (no FAILURE; warnings are printed)`, async () => {
      const out = await run(node, [bin!, 'server', '--url', url, '--scenario', scenario], { cwd: root, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }).catch(
        (err: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: err.stdout ?? '', stderr: `${err.stderr ?? ''}\n(exit ${err.code})` }),
      );
      const text = `${out.stdout}\n${out.stderr}`;
      const warnings = text.split('\n').filter((line) => /\bWARNING\b/.test(line));
      for (const w of warnings) console.log(`      ${scenario}: ${w.trim()}`);
      const summary = /Passed: .*/.exec(text)?.[0];
      if (summary) console.log(`      ${scenario}: ${summary}`);
      expect(text, text).to.not.match(/FAILURE|\bFAILED\b/);
      expect(text, text).to.match(/SUCCESS|passed/i);
    });
  }
});
