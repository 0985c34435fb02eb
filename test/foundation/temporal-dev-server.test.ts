import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { testEnv } from '../helpers/env';
import { startTemporalDevServer } from '../helpers/temporal-dev-server';

/**
 * The tests' and the bench's Temporal dev server when it misses the SDK's fixed 5 s startup limit: a real server,
 * behind a wrapper that makes its first start 7 s late (as a busy machine once did).
 */
describe('the Temporal dev server of the tests and the bench', () => {
  it('is started again, on a new database file, when its first start misses the SDK\'s limit; the late one does not linger', async function () {
    if (!testEnv.temporalCli) this.skip();
    this.timeout(60_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-slow-temporal-'));
    const late = path.join(dir, 'late.pid');
    const cli = path.join(dir, 'temporal');
    // The first start writes its pid and sleeps past the limit, then becomes the real server (exec keeps the pid).
    fs.writeFileSync(cli, `#!/bin/sh\nif [ ! -e '${late}' ]; then echo $$ > '${late}'; sleep 7; fi\nexec '${testEnv.temporalCli}' "$@"\n`, { mode: 0o755 });
    const said: string[] = [];
    const env = await startTemporalDevServer({
      cli,
      extraArgs: ['--log-level', 'error'],
      dbFile: (attempt) => path.join(dir, `temporal-${attempt}.db`),
      log: (line) => said.push(line),
    });
    try {
      expect(said).to.deep.equal(['the Temporal dev server did not start in time (attempt 1 of 3); starting it again']);
      // The second attempt's file is the one the running server keeps.
      expect(fs.readdirSync(dir).filter((f) => /^temporal-\d\.db$/.test(f))).to.deep.equal(['temporal-2.db']);
      const { namespaces } = await env.connection.workflowService.listNamespaces({});
      expect(namespaces.map((n) => n.namespaceInfo?.name)).to.include('default');
      // The server that missed its limit was stopped by the SDK, not left running beside the new one.
      const pid = Number(fs.readFileSync(late, 'utf8'));
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 50 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
      expect(alive(), `the late server (pid ${pid}) still runs`).to.equal(false);
    } finally {
      await env.teardown();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
