import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { testEnv } from '../helpers/env';

const CONFORMANCE = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  description: string;
  errorMessage?: string;
}

/**
 * Each scenario with the checks that must succeed, and the checks allowed to end in a WARNING: the retry timing of
 * `sse-retry` warns when the client reconnects more than 200 ms after the server's `retry:` (on a busy machine); it
 * fails when the client is early or more than twice as late.
 */
const SCENARIOS: Array<{ scenario: string; succeeds: string[]; mayWarn?: string[] }> = [
  { scenario: 'initialize', succeeds: ['mcp-client-initialization'] },
  { scenario: 'tools_call', succeeds: ['tool-add-numbers'] },
  { scenario: 'sse-retry', succeeds: ['client-sse-graceful-reconnect', 'client-sse-last-event-id'], mayWarn: ['client-sse-retry-timing'] },
  { scenario: 'auth/client-credentials-basic', succeeds: ['client-credentials-basic-auth'] },
  { scenario: 'auth/client-credentials-jwt', succeeds: ['client-credentials-jwt-verified'] },
];

/**
 * The client scenarios of `@modelcontextprotocol/conformance` that a client without a person can take, run (under
 * Node 24, which the suite needs) against scripts/mcp-conformance-client.ts, which drives our client. Pass: no check
 * FAILURE, and no WARNING but those a scenario allows. The suite's servers run on loopback.
 */
describe('MCP conformance: client scenarios', function () {
  this.timeout(120_000);
  let out: string;
  before(function () {
    if (!testEnv.node24 || !fs.existsSync(CONFORMANCE)) this.skip();
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-conformance-'));
  });
  after(() => out && fs.rmSync(out, { recursive: true, force: true }));

  for (const { scenario, succeeds, mayWarn = [] } of SCENARIOS) {
    it(`passes ${scenario}`, async function () {
      // `sse-retry` is intermittent (about one run in three on a busy machine) for a race between the suite's server
      // and the SDK's client, not a fault of ours: after `notifications/initialized` the SDK's transport opens its
      // standalone GET stream without waiting for it (StreamableHTTPClientTransport.send), and the scenario's server
      // takes every GET for the reconnection and answers the pending tool call on whichever GET comes after the call.
      // When the standalone GET of the calling session reaches it after the `tools/call` POST, the call is answered on
      // that GET at once: no reconnection, no Last-Event-ID (a WARNING the test does not allow), and the client exits
      // before the server's 50 ms close timer ("could not measure timing"). So it is tried up to three times, each
      // attempt with results of its own; a client that never resumes fails every attempt.
      if (scenario === 'sse-retry') this.retries(2);
      const attemptOut = fs.mkdtempSync(path.join(out, 'attempt-'));
      const command = `${testEnv.node24} node_modules/tsx/dist/cli.mjs scripts/mcp-conformance-client.ts`;
      const run = await promisify(execFile)(testEnv.node24!, [CONFORMANCE, 'client', '--command', command, '--scenario', scenario, '-o', attemptOut], { maxBuffer: 64 * 1024 * 1024 }).catch(
        (err: { stdout?: string; stderr?: string; code?: number }) => err,
      );
      // Results go to <out>/<scenario>-<time>/ (`auth/x`: <out>/auth/x-<time>/).
      const folder = path.join(attemptOut, path.dirname(scenario));
      const dir = fs.readdirSync(folder).find((d) => d.startsWith(`${path.basename(scenario)}-`));
      expect(dir, `${run.stdout}\n${run.stderr}`).to.be.a('string');
      const checks = JSON.parse(fs.readFileSync(path.join(folder, dir!, 'checks.json'), 'utf8')) as Check[];
      const warnings = checks.filter((c) => c.status === 'WARNING' && mayWarn.includes(c.id));
      if (warnings.length) console.log(`      ${scenario}: ${warnings.map((c) => `WARNING ${c.id}: ${c.errorMessage ?? c.description}`).join('; ')}`);
      const bad = checks.filter((c) => c.status === 'FAILURE' || (c.status === 'WARNING' && !mayWarn.includes(c.id))).map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
      expect(bad, run.stdout).to.deep.equal([]);
      expect(checks.filter((c) => c.status === 'SUCCESS').map((c) => c.id)).to.include.members(succeeds);
      expect(`${run.stdout}${run.stderr}`).to.include('OVERALL: PASSED');
    });
  }
});
