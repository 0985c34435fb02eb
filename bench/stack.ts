import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { devServerSqliteFlags } from '../src/temporal/dev-server-config';
import { startTemporalDevServer } from '../test/helpers/temporal-dev-server';
import { testEnv } from '../test/helpers/env';
import { startFerretDb } from '../test/helpers/ferretdb';
import { startFakeProvider, type Responder } from '../test/helpers/fake-provider';
import { freePort, waitForPort } from '../test/helpers/net';
import { startClusterServers } from '../test/cluster/servers';
import { createBaselineActivities } from './baseline/activities';

const root = path.resolve(__dirname, '..');

/**
 * A child started as `node --import tsx <file>` (one process, so its RSS is the component's own), logging to
 * /tmp/ptr-bench-<logName>.log (a second process of the same file needs a name of its own).
 */
export function startChild(file: string, args: string[], env: Record<string, string>, nodeFlags: string[] = [], logName = path.basename(file, '.ts')): ChildProcess {
  const log = path.join(os.tmpdir(), `ptr-bench-${logName}.log`);
  const out = fs.openSync(log, 'w');
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', path.join(root, file), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', out, out],
  });
  process.stderr.write(`[bench] ${file} logs to ${log}\n`);
  return child;
}

/** What a part of the bench that scripts the fake provider and samples the processes is given (bench/slow.ts, bench/long.ts). */
export interface PartDeps {
  stack: Awaited<ReturnType<typeof startBenchStack>>;
  /** The API with the bench user's session; JSON unless `init.headers` says otherwise. */
  api: (path: string, init?: RequestInit) => Promise<Response>;
  /** The stack's processes by name (api, worker, ferretdb, temporal). */
  pids: Record<string, number>;
  /** What the fake answers every request that is not the part's own (the scripted responder is global). */
  otherwise: Responder;
  log: (msg: string) => void;
}

/**
 * Where the Temporal dev server keeps its database: `file`, a SQLite file as `npm run dev` keeps it (src/cli/dev.ts,
 * `--db-filename`), here in a temporary directory deleted when the stack stops; `memory`, in memory (faster, but
 * what nobody runs).
 */
export type TemporalStore = 'file' | 'memory' | 'cluster';

/**
 * The Temporal server and the store the bench's API and worker use: the dev server and FerretDB on SQLite, or
 * (`cluster`) the cluster topology's servers (test/cluster/servers.ts: temporal-server and FerretDB on PostgreSQL).
 */
async function startServers(temporalStore: TemporalStore) {
  if (temporalStore === 'cluster') {
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-bench-cluster-logs-'));
    process.stderr.write(`[bench] the cluster's servers log to ${logDir}\n`);
    const servers = await startClusterServers({ logDir, logLevel: 'error' });
    const connection = await Connection.connect({ address: servers.temporalAddress });
    return {
      mongoUrl: servers.mongoUrl('bench'),
      temporalAddress: servers.temporalAddress,
      client: new Client({ connection, namespace: 'default' }),
      temporalMetricsPort: servers.ports.temporalMetrics,
      postgresDataDir: servers.postgres.dataDir,
      async stop() {
        await connection.close();
        await servers.stop();
      },
    };
  }
  const ferret = await startFerretDb(testEnv.ferretdbBin!);
  const temporalDir = temporalStore === 'file' ? fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-bench-temporal-')) : undefined;
  // The server's Prometheus metrics (requests and persistence operations by kind) on a port the bench knows.
  const temporalMetricsPort = await freePort();
  // Fairness on, as everywhere (docs/fairness.md): an eagerly dispatched first activity skips matching, so a flood
  // measured here is ordered fairly at its workflow tasks and later activities, not at each run's first activity.
  const temporal = await startTemporalDevServer({
    cli: testEnv.temporalCli!,
    dbFile: temporalDir === undefined ? undefined : (attempt) => path.join(temporalDir, `temporal-${attempt}.db`),
    extraArgs: [...(temporalDir ? devServerSqliteFlags() : []), '--log-level', 'error', '--metrics-port', String(temporalMetricsPort)],
    log: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  return {
    mongoUrl: `${ferret.url}bench`,
    temporalAddress: temporal.connection.options.address,
    client: temporal.client,
    temporalMetricsPort,
    postgresDataDir: undefined,
    async stop() {
      await temporal.teardown();
      if (temporalDir) fs.rmSync(temporalDir, { recursive: true, force: true });
      await ferret.stop();
    },
  };
}

/**
 * The dev stack with an instant fake provider: Temporal dev server, FerretDB, API and worker as processes.
 * `heapSnapshotDir`: the API writes a V8 heap snapshot there on SIGUSR2. `env`: more settings for the API and the
 * worker (the mcp part's MCP_ALLOWLIST). `temporalStore`: `file` unless told (`cluster`: the cluster topology's servers instead of the dev server and FerretDB on SQLite).
 */
export async function startBenchStack(options: { profileDir?: string; heapSnapshotDir?: string; env?: Record<string, string>; temporalStore?: TemporalStore } = {}) {
  if (!testEnv.temporalCli || !testEnv.ferretdbBin) throw new Error('run scripts/install-tools.sh first (npm run tools)');
  const temporalStore = options.temporalStore ?? 'file';
  const fake = await startFakeProvider();
  const servers = await startServers(temporalStore);
  const port = await freePort();
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    MONGO_URL: servers.mongoUrl,
    TEMPORAL_ADDRESS: servers.temporalAddress,
    TEMPORAL_TASK_QUEUE: 'bench',
    MASTER_KEY: `bench:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'sk-bench-operator',
    // The long part's run has 50 tool turns and a final answer; the other parts' runs take one turn.
    RUN_MAX_TURNS: '100',
    // The bench client stands in for many clients from one address (200 pollers, 32 runs in flight): no cap on its
    // connections.
    CONNECTIONS_PER_ADDRESS: '0',
    ...options.env,
  };
  // `--profile`: V8 CPU profiles of the API and the worker, one per thread (the worker runs workflows in threads of its
  // own), written when they exit; open them in Chrome DevTools.
  const profile = (name: string) => (options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(options.profileDir, name)}`] : []);
  // This worker's /metrics (its process memory, heap included) for the memory part; not in `env`, which a second
  // worker started by the slow part shares.
  const workerHttpPort = await freePort();
  const worker = startChild('src/worker.ts', [], { ...env, WORKER_HTTP_PORT: String(workerHttpPort) }, profile('worker'));
  const heapSnapshots = options.heapSnapshotDir ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${options.heapSnapshotDir}`] : [];
  const api = startChild('src/server.ts', [], env, [...profile('api'), ...heapSnapshots]);
  await waitForPort(port, 60_000);

  // The baseline's worker: a bare workflow and one activity on its own task queue, in this process.
  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS! });
  const baselineWorker = await Worker.create({
    connection,
    taskQueue: 'bench-baseline',
    workflowsPath: require.resolve('./baseline/workflows'),
    activities: createBaselineActivities(fake.openaiBaseUrl),
  });
  const baselineRun = baselineWorker.run();

  return {
    env,
    apiUrl: `http://127.0.0.1:${port}`,
    fake,
    temporalStore,
    client: servers.client,
    temporalMetricsUrl: `http://127.0.0.1:${servers.temporalMetricsPort}/metrics`,
    /** The cluster's PostgreSQL data directory (its postmaster's pid is in it); undefined on the dev server. */
    postgresDataDir: servers.postgresDataDir,
    workerMetricsUrl: `http://127.0.0.1:${workerHttpPort}/metrics`,
    heapSnapshotDir: options.heapSnapshotDir,
    apiPid: api.pid!,
    workerPid: worker.pid!,
    async stop() {
      baselineWorker.shutdown();
      await baselineRun;
      await connection.close();
      for (const c of [api, worker]) c.kill('SIGTERM');
      await Promise.all([api, worker].map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
      await servers.stop();
      await fake.close();
    },
  };
}
