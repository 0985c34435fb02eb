import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { assertPortFree, waitFor } from '../../src/cli/dev-processes';
import { initPostgres, startPostgres, stopPostgres, type PostgresOptions } from '../../src/cli/cluster-postgres';
import { createDatabase, registerNamespace, serverArgs, setUpSchemas, writeServerConfig, type TemporalServerTools } from '../../src/cli/cluster-temporal';
import {
  apiProcess, clusterPorts, FERRETDB_DB, ferretDbProcess, POSTGRES_USER, workerProcess, type ClusterPorts, type ClusterProcess,
} from '../../src/cli/cluster-topology';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { ManagedProcess, WORKER_READY, type ProcessSpec } from '../helpers/managed-process';
import { waitForPort } from '../helpers/net';

/**
 * The cluster suite's topology, started once: what `npm run stack:cluster` runs (src/cli/cluster-*.ts), from the same
 * pieces, on a fresh data directory and a free block of ports — PostgreSQL, temporal-server on it, FerretDB on it,
 * two workers and two APIs as operators run them — each server a ManagedProcess the tests kill and start again.
 * Only the model provider is faked. Every process logs to test-results/cluster/logs/.
 */
export interface ClusterStack {
  ports: ClusterPorts;
  apiUrls: string[];
  mongoUrl: string;
  temporalAddress: string;
  env: Record<string, string>;
  fake: FakeProvider;
  postgres: PostgresOptions;
  temporal: ManagedProcess;
  ferretdb: ManagedProcess;
  apis: ManagedProcess[];
  workers: ManagedProcess[];
  client: Client;
  /** Stops PostgreSQL (cleanly: `pg_ctl -m fast`), as a database that goes away does; `startPostgres` brings it back. */
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
}

/** The service's settings in the suite: short retries, so that faults show and pass within seconds (as the fault suite's). */
const SERVICE_SETTINGS = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
  RUN_RECORD_CACHE_MS: '2000',
  SESSION_CACHE_MS: '10000',
  RECONCILE_INTERVAL_MS: '5000',
  // Retention on (far in the past), so that its Schedule exists: the suite checks it runs once per interval.
  RUN_RETENTION_DAYS: '3650',
  RETENTION_INTERVAL_MS: '5000',
  PROVIDER_TIMEOUT_MS: '15000',
  PROVIDER_HEARTBEAT_TIMEOUT_MS: '10000',
  PROVIDER_RETRY_INITIAL_MS: '200',
  PROVIDER_RETRY_MAX_MS: '3000',
  PROVIDER_MAX_ATTEMPTS: '20',
  CONNECTIONS_PER_ADDRESS: '0',
  TEMPORAL_TASK_QUEUE: 'cluster',
};

let stack: ClusterStack | undefined;
const cleanup: Array<() => Promise<unknown>> = [];
let failed = false;

export function clusterStack(): ClusterStack {
  if (!stack) throw new Error('the cluster is not started (test/cluster/harness.ts root hooks)');
  return stack;
}

async function installTools(): Promise<TemporalServerTools & { POSTGRES_BIN_DIR: string; FERRETDB_BIN: string }> {
  const { stdout } = await promisify(execFile)('bash', ['scripts/install-tools.sh', '--cluster'], { maxBuffer: 1 << 20 });
  return Object.fromEntries(stdout.trim().split('\n').filter((l) => l.includes('=')).map((l) => l.split('=', 2))) as never;
}

/** A block of 16 free loopback ports (the topology's layout), found by trying random ones. */
async function freeBlock(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Below 32768: Temporal's PostgreSQL schema keeps membership ports in a smallint.
    const base = 20_000 + 16 * Math.floor(Math.random() * 750);
    const ports = Object.values(clusterPorts(base));
    if ((await Promise.all(ports.map((p) => assertPortFree(p, '', '').then(() => true, () => false)))).every(Boolean)) return base;
  }
  throw new Error('no block of 16 free ports found');
}

const managed = (p: ClusterProcess, ready: ProcessSpec['ready'], readyTimeoutMs: number, logDir: string) =>
  new ManagedProcess(p.name, { command: p.command, args: p.args, env: p.env, ready, readyTimeoutMs }, logDir);

async function startCluster(): Promise<ClusterStack> {
  const tools = await installTools();
  const logDir = path.resolve('test-results', 'cluster', 'logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  // Enterable by the `postgres` user (PostgreSQL's data directory is inside), listable by no one else.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-cluster-'));
  fs.chmodSync(dataDir, 0o711);
  cleanup.push(async () => {
    if (!failed) fs.rmSync(dataDir, { recursive: true, force: true });
    else console.error(`cluster data kept for inspection: ${dataDir}`);
  });
  const ports = clusterPorts(await freeBlock());
  const password = crypto.randomBytes(24).toString('hex');
  const postgres: PostgresOptions = { binDir: tools.POSTGRES_BIN_DIR, dataDir: path.join(dataDir, 'postgresql'), port: ports.postgres, user: POSTGRES_USER, password };
  await initPostgres(postgres);
  await startPostgres(postgres);
  cleanup.unshift(() => stopPostgres(postgres));
  const sql = { port: ports.postgres, user: POSTGRES_USER, password };
  await setUpSchemas(tools, sql, () => undefined);
  await createDatabase(tools, sql, FERRETDB_DB);

  const temporalAddress = `127.0.0.1:${ports.temporal}`;
  const configDir = path.join(dataDir, 'temporal');
  writeServerConfig(configDir, { ports, sql, logLevel: 'warn' });
  const temporal = managed({ name: 'temporal-server', command: tools.TEMPORAL_SERVER_BIN, args: serverArgs(configDir), env: {} }, () => registerNamespace(temporalAddress, 'default'), 180_000, logDir);
  const ferretdb = managed(ferretDbProcess(tools.FERRETDB_BIN, ports, password, 'warn'), () => waitForPort(ports.mongo, 30_000), 30_000, logDir);
  const processes: ManagedProcess[] = [temporal, ferretdb];
  const killAll = () => processes.forEach((p) => p.killNow());
  process.once('exit', killAll);
  cleanup.unshift(async () => {
    for (const p of [...processes].reverse()) await p.stop().catch(() => undefined);
    process.off('exit', killAll);
  });
  await Promise.all([temporal.start(), ferretdb.start()]);

  const fake = await startFakeProvider();
  cleanup.unshift(() => fake.close());
  const mongoUrl = `mongodb://127.0.0.1:${ports.mongo}/cluster`;
  const env: Record<string, string> = {
    ...SERVICE_SETTINGS,
    MONGO_URL: mongoUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    MASTER_KEY: `cluster-k1:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    ANTHROPIC_BASE_URL: fake.anthropicBaseUrl,
    OPENAI_API_KEY: `sk-operator-openai-${crypto.randomBytes(12).toString('hex')}`,
  };
  const workers = [1, 2].map((n) => managed(workerProcess(n, ports, env), (out) => waitFor(async () => out().includes(WORKER_READY), 'the worker', 120_000), 120_000, logDir));
  const apis = [1, 2].map((n) => {
    const p = apiProcess(n, ports, env);
    return managed(p, () => waitFor(async () => (await fetch(`${p.env.PUBLIC_URL}/healthz`)).ok, 'the API', 90_000), 90_000, logDir);
  });
  processes.push(...workers, ...apis);
  // A service that crashes is started again, as a supervisor would (the tests' own kills are expected exits).
  for (const p of [...workers, ...apis, temporal]) p.onCrash = () => setTimeout(() => void p.ensureRunning().catch(() => undefined), 1000);
  await Promise.all([...workers, ...apis].map((p) => p.start()));

  const connection = await Connection.connect({ address: temporalAddress });
  cleanup.unshift(() => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  return {
    ports,
    apiUrls: apis.map((_, i) => `http://127.0.0.1:${i === 0 ? ports.api1 : ports.api2}`),
    mongoUrl,
    temporalAddress,
    env,
    fake,
    postgres,
    temporal,
    ferretdb,
    apis,
    workers,
    client,
    stopPostgres: () => stopPostgres(postgres),
    startPostgres: () => startPostgres(postgres),
  };
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(600_000);
    const started = Date.now();
    stack = await startCluster();
    console.log(`  (cluster started in ${((Date.now() - started) / 1000).toFixed(1)} s: APIs ${stack.apiUrls.join(', ')}, Temporal ${stack.temporalAddress})`);
  },
  afterEach(this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') failed = true;
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    stack = undefined;
    for (const step of cleanup.splice(0)) await step().catch((err: Error) => console.error(`teardown: ${err.message}`));
  },
};
