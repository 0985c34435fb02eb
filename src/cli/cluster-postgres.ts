import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The cluster's PostgreSQL (Debian's server binaries, `POSTGRES_BIN_DIR` of scripts/install-tools.sh --cluster),
 * started and stopped with `pg_ctl`, which runs the server detached from our terminal: Ctrl-C reaches the cluster
 * command, which stops PostgreSQL last and cleanly (`-m fast`), never mid-write. `initdb` and `postgres` refuse to
 * run as root: as root every command runs as the `postgres` user (`runuser -u postgres`), and the data directory is
 * one that user owns. Loopback TCP only (no Unix socket, so no shared socket directory); passwords checked with
 * SCRAM; the one role is the superuser `initdb` creates.
 */
export interface PostgresOptions {
  binDir: string;
  dataDir: string;
  port: number;
  user: string;
  password: string;
}

const asRoot = () => process.getuid?.() === 0;
const OS_USER = 'postgres';

/** `command args` as the user PostgreSQL runs as. */
function command(bin: string, args: string[]): [string, string[]] {
  return asRoot() ? ['runuser', ['-u', OS_USER, '--', bin, ...args]] : [bin, args];
}

async function pg(options: PostgresOptions, tool: string, args: string[], timeoutMs = 120_000) {
  const [cmd, argv] = command(path.join(options.binDir, tool), args);
  try {
    return await run(cmd, argv, { timeout: timeoutMs, maxBuffer: 1 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; code?: number | string };
    throw Object.assign(new Error(`${tool} ${args[0] ?? ''} failed (${e.code}): ${(e.stderr || e.stdout || String(err)).trim().slice(-2000)}`), { code: e.code });
  }
}

/** Creates the data directory's parents so that the `postgres` user can own the directory itself. */
function prepareDataDir(dataDir: string) {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  if (!fs.existsSync(dataDir)) fs.mkdirSync(dataDir, { mode: 0o700 });
  if (asRoot()) {
    const { uid, gid } = osUser();
    fs.chownSync(dataDir, uid, gid);
  }
}

function osUser(): { uid: number; gid: number } {
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${OS_USER}:`));
  if (!line) throw new Error(`running as root, PostgreSQL needs the "${OS_USER}" user (Debian's postgresql package creates it)`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export const isInitialized = (dataDir: string) => fs.existsSync(path.join(dataDir, 'PG_VERSION'));

/** `initdb` once: returns false when the directory already holds a cluster (a second start reuses it). */
export async function initPostgres(options: PostgresOptions): Promise<boolean> {
  if (isInitialized(options.dataDir)) return false;
  prepareDataDir(options.dataDir);
  // The password reaches initdb in a file only its user can read, removed at once.
  const pwDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-initdb-'));
  const pwFile = path.join(pwDir, 'pw');
  fs.writeFileSync(pwFile, `${options.password}\n`, { mode: 0o600 });
  if (asRoot()) {
    const { uid, gid } = osUser();
    fs.chownSync(pwDir, uid, gid);
    fs.chownSync(pwFile, uid, gid);
  }
  try {
    await pg(options, 'initdb', [
      '-D', options.dataDir, '-U', options.user, `--pwfile=${pwFile}`,
      '--auth-host=scram-sha-256', '--auth-local=scram-sha-256', '-E', 'UTF8', '--locale=C',
    ]);
  } finally {
    fs.rmSync(pwDir, { recursive: true, force: true });
  }
  // Loopback TCP only; enough connections for Temporal's pools (persistence + visibility) and FerretDB's.
  const conf = path.join(options.dataDir, 'postgresql.conf');
  fs.appendFileSync(conf, "\n# prompt-task-runner cluster\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\n");
  return true;
}

/** The pid of the server running on this data directory, if one is. */
export function runningPid(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!pid) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Starts the server on `port` and waits until it accepts connections. Its log: <dataDir>/server.log. */
export async function startPostgres(options: PostgresOptions): Promise<void> {
  await pg(options, 'pg_ctl', ['start', '-D', options.dataDir, '-l', logFile(options), '-w', '-t', '120', '-o', `-p ${options.port}`], 150_000);
}

/** Stops the server (`-m fast`: open sessions are ended, committed data is kept); nothing when it does not run. */
export async function stopPostgres(options: Pick<PostgresOptions, 'binDir' | 'dataDir'>): Promise<void> {
  if (!runningPid(options.dataDir)) return;
  await pg(options as PostgresOptions, 'pg_ctl', ['stop', '-D', options.dataDir, '-m', 'fast', '-w', '-t', '60'], 90_000);
}

export const logFile = (options: Pick<PostgresOptions, 'dataDir'>) => path.join(options.dataDir, 'server.log');
