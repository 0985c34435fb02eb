import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { testEnv } from '../helpers/env';

const CONFORMANCE = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';

/**
 * The client scenarios of `@modelcontextprotocol/conformance` for OAuth client credentials, run (under Node 24, which
 * the suite needs) against scripts/mcp-conformance-client.ts, which drives our client. Pass: no check FAILURE and no
 * WARNING in the scenario's checks. The suite's servers run on loopback.
 */
describe('MCP conformance: OAuth client credentials scenarios', function () {
  this.timeout(120_000);
  let out: string;
  before(function () {
    if (!testEnv.node24 || !fs.existsSync(CONFORMANCE)) this.skip();
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-conformance-'));
  });
  after(() => out && fs.rmSync(out, { recursive: true, force: true }));

  for (const scenario of ['auth/client-credentials-basic', 'auth/client-credentials-jwt']) {
    it(`passes ${scenario}`, async () => {
      const command = `${testEnv.node24} node_modules/tsx/dist/cli.mjs scripts/mcp-conformance-client.ts`;
      const run = await promisify(execFile)(testEnv.node24!, [CONFORMANCE, 'client', '--command', command, '--scenario', scenario, '-o', out], { maxBuffer: 64 * 1024 * 1024 }).catch(
        (err: { stdout?: string; stderr?: string; code?: number }) => err,
      );
      const dir = fs.readdirSync(path.join(out, 'auth')).find((d) => d.startsWith(`${scenario.split('/')[1]}-`));
      expect(dir, `${run.stdout}\n${run.stderr}`).to.be.a('string');
      const checks = JSON.parse(fs.readFileSync(path.join(out, 'auth', dir!, 'checks.json'), 'utf8')) as Array<{ id: string; status: string; description: string }>;
      const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map((c) => `${c.status} ${c.id}: ${c.description}`);
      expect(bad, run.stdout).to.deep.equal([]);
      expect(checks.filter((c) => c.status === 'SUCCESS').map((c) => c.id)).to.include(scenario.endsWith('jwt') ? 'client-credentials-jwt-verified' : 'client-credentials-basic-auth');
      expect(`${run.stdout}${run.stderr}`).to.include('OVERALL: PASSED');
    });
  }
});
