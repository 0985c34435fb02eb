import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ferretDbSpec, ManagedProcess } from './managed-process';
import { freePort } from './net';

/** FerretDB 1.x on SQLite files in a fresh temporary directory (removed on stop), on a free loopback port, for one test run. */
export async function startFerretDb(bin: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-ferretdb-'));
  const ferretdb = new ManagedProcess('ferretdb', ferretDbSpec({ bin, dir, port }));
  await ferretdb.start();
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    pid: ferretdb.pid!,
    async stop() {
      await ferretdb.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
