import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** Child processes of the dev stack: started in order, stopped together (Ctrl-C, or when any one dies). */
export class ProcessGroup {
  private readonly children: Array<{ name: string; child: ChildProcess }> = [];
  private stopping = false;
  onUnexpectedExit: (name: string, code: number | null) => void = () => undefined;

  /** `logFile`: its stdout and stderr go there (appended), not to ours; the last of it is shown should it die. */
  start(name: string, command: string, args: string[], options: { env?: NodeJS.ProcessEnv; quiet?: boolean; logFile?: string } = {}) {
    const log = options.logFile ? fs.openSync(options.logFile, 'a', 0o600) : undefined;
    const child = spawn(command, args, {
      env: options.env,
      stdio: ['ignore', log ?? (options.quiet ? 'ignore' : 'inherit'), 'pipe'],
      detached: false,
    });
    if (log !== undefined) fs.closeSync(log);
    const quiet = options.quiet || !!options.logFile;
    let tail = '';
    child.stderr?.on('data', (d: Buffer) => {
      tail = (tail + d.toString()).slice(-4000);
      if (options.logFile) fs.appendFileSync(options.logFile, d);
      else if (!quiet) process.stderr.write(d);
    });
    child.once('exit', (code) => {
      if (!this.stopping) {
        if (quiet && tail) process.stderr.write(`--- last output of ${name} ---\n${tail}\n`);
        this.onUnexpectedExit(name, code);
      }
    });
    this.children.push({ name, child });
    return child;
  }

  /** SIGTERM everything in reverse order, SIGKILL what is still alive after 10 s. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    for (const { child } of [...this.children].reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }
}

/** Fails with a clear message when the port is taken. */
export function assertPortFree(port: number, what: string, hint: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', () => reject(new Error(`port ${port} (${what}) is already in use: ${hint}`)));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/**
 * FerretDB's arguments for SQLite files in `dir`, on 127.0.0.1:`port` (the dev stack's, the tests' and the bench's).
 * `_txlock=immediate`: without it, concurrent updates of one document deadlock. `synchronous(normal)`: in SQLite's WAL
 * mode (FerretDB's default) a commit is safe from a crash of any process at once, and the log is flushed to disk at
 * checkpoints rather than at every commit: like MongoDB's default journal (flushed every 100 ms), a power loss may
 * take the last moments' writes, never the database. It halves a write's latency here.
 */
export const ferretDbArgs = (options: { dir: string; port: number; logLevel?: 'warn' | 'error' }): string[] => [
  '--handler=sqlite',
  `--sqlite-url=file:${options.dir}/?_txlock=immediate&_pragma=synchronous(normal)`,
  ...ferretDbCommonArgs(options),
];

/**
 * FerretDB's arguments for its PostgreSQL backend (the cluster's: src/cli/cluster-topology.ts), on 127.0.0.1:`port`.
 * The database's URL, which holds its password, is FERRETDB_POSTGRESQL_URL in FerretDB's environment.
 */
export const ferretDbPostgresArgs = (options: { port: number; logLevel?: 'warn' | 'error' }): string[] => ['--handler=postgresql', ...ferretDbCommonArgs(options)];

const ferretDbCommonArgs = (options: { port: number; logLevel?: 'warn' | 'error' }): string[] => [
  `--listen-addr=127.0.0.1:${options.port}`,
  '--state-dir=-',
  '--debug-addr=-',
  '--telemetry=disable',
  `--log-level=${options.logLevel ?? 'error'}`,
];
