import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from './net';

/**
 * FerretDB 1.x on SQLite files in a fresh temporary directory (removed on stop), on a free loopback port, for one
 * test run. Not `?mode=memory`: with it, FerretDB 1.24.2 deadlocks on any update of an existing document (the
 * update's transaction never gets its lock, and every later command on the collection hangs behind it).
 */
export async function startFerretDb(bin: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-ferretdb-'));
  const child: ChildProcess = spawn(
    bin,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${dir}/?_txlock=immediate`,
      `--listen-addr=127.0.0.1:${port}`,
      '--state-dir=-',
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`FerretDB exited with ${code}: ${stderr.slice(-2000)}`))),
  );
  await Promise.race([waitForPort(port, 30_000), exited]);
  exited.catch(() => undefined);
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    pid: child.pid!,
    async stop() {
      child.removeAllListeners('exit');
      if (child.exitCode === null) {
        const done = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await done;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
