import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { signedIn } from '../helpers/api';
import { startAuthProxy } from '../helpers/auth-proxy';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { testEnv } from '../helpers/env';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');

/**
 * The server scenarios of `@modelcontextprotocol/conformance` that a server of task-backed tools can pass. Those left
 * out test tools, resources, prompts, logging or completions a conformance server is asked to have
 * (`test_simple_text`, `test_reconnection`...), which a profile's tools are not.
 */
export const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-polling', 'server-sse-multiple-streams'];

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
    const proxy = await startAuthProxy(getStack().apiUrl, `Bearer ${me.sessionId}`);
    url = `${proxy.url}/mcp`;
  });

  for (const scenario of SCENARIOS) {
    it(`passes ${scenario} (no FAILURE; warnings are printed)`, async () => {
      const out = await run(node, [bin!, 'server', '--url', url, '--scenario', scenario], { cwd: root, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }).catch(
        (err: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: err.stdout ?? '', stderr: `${err.stderr ?? ''}\n(exit ${err.code})` }),
      );
      const text = `${out.stdout}\n${out.stderr}`;
      const warnings = text.split('\n').filter((line) => /WARN/i.test(line));
      for (const w of warnings) console.log(`      ${scenario}: ${w.trim()}`);
      expect(text, text).to.not.match(/FAILURE|\bFAILED\b/);
      expect(text, text).to.match(/SUCCESS|passed/i);
    });
  }
});
