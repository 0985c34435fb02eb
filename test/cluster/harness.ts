import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { reconcileScheduleId, retentionScheduleId } from '../../src/temporal/ids';
import { waitFor } from '../../src/cli/dev-processes';
import { type PostgresOptions, startPostgres, stopPostgres } from '../../src/cli/cluster-postgres';
import { apiProcess, workerProcess, type ClusterPorts, type ClusterProcess } from '../../src/cli/cluster-topology';
import { uiArgs, writeUiConfig } from '../../src/cli/cluster-temporal';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { ManagedProcess, WORKER_READY } from '../helpers/managed-process';
import { freePort, waitForPort } from '../helpers/net';
import { managed, startClusterServers } from './servers';

/**
 * The cluster suite's topology, started once: what `npm run stack:cluster` runs (src/cli/cluster-*.ts), from the same
 * pieces, on a fresh data directory and a free block of ports — PostgreSQL, temporal-server on it, FerretDB on it,
 * two workers and two APIs as operators run them — each server a ManagedProcess the tests kill and start again.
 * Only the model provider is faked. Every process logs to test-results/cluster/logs/.
 */
export interface ClusterStack {
  ports: ClusterPorts;
  apiUrls: string[];
  /** The Temporal Web UI (ui-server) against the cluster's Temporal server, with the first API's codec endpoint. */
  uiUrl: string;
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
  /**
   * One more API and worker on the cluster's Temporal and store, with `settings` over the suite's and a task queue of
   * their own (so their settings touch no other test's runs); `stop` ends both and removes their queue's Schedules.
   */
  startPair(name: string, settings: Record<string, string>): Promise<{ url: string; stop(): Promise<void> }>;
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

async function startCluster(): Promise<ClusterStack> {
  const logDir = path.resolve('test-results', 'cluster', 'logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const servers = await startClusterServers({ logDir });
  cleanup.unshift(() => servers.stop(failed).then(() => failed && console.error(`cluster data kept for inspection: ${servers.dataDir}`)));
  const { ports, postgres, temporal, ferretdb, temporalAddress } = servers;
  const processes: ManagedProcess[] = [];
  const killAll = () => processes.forEach((p) => p.killNow());
  process.once('exit', killAll);
  cleanup.unshift(async () => {
    for (const p of [...processes].reverse()) await p.stop().catch(() => undefined);
    process.off('exit', killAll);
  });

  const fake = await startFakeProvider();
  cleanup.unshift(() => fake.close());
  const mongoUrl = servers.mongoUrl('cluster');
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
  // A worker is ready once it says it polls; an API once its /healthz answers.
  const worker = (spec: ClusterProcess) => managed(spec, (out) => waitFor(async () => out().includes(WORKER_READY), 'the worker', 120_000), 120_000, logDir);
  const api = (spec: ClusterProcess) => managed(spec, () => waitFor(async () => (await fetch(`${spec.env.PUBLIC_URL}/healthz`)).ok, 'the API', 90_000), 90_000, logDir);
  const workers = [1, 2].map((n) => worker(workerProcess(n, ports, env)));
  const apis = [1, 2].map((n) => api(apiProcess(n, ports, env)));
  const uiDir = path.join(servers.dataDir, 'ui');
  writeUiConfig(uiDir, { ports, namespace: 'default', codecEndpoint: `http://127.0.0.1:${ports.api1}/codec` });
  const ui = managed({ name: 'temporal-ui', command: servers.tools.TEMPORAL_UI_SERVER_BIN, args: uiArgs(uiDir), env: {} }, () => waitForPort(ports.temporalUi, 30_000), 30_000, logDir);
  processes.push(...workers, ...apis, ui);
  // A service that crashes is started again, as a supervisor would (the tests' own kills are expected exits).
  for (const p of [...workers, ...apis, temporal]) p.onCrash = () => setTimeout(() => void p.ensureRunning().catch(() => undefined), 1000);
  await Promise.all([...workers, ...apis, ui].map((p) => p.start()));

  const connection = await Connection.connect({ address: temporalAddress });
  cleanup.unshift(() => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  return {
    ports,
    apiUrls: apis.map((_, i) => `http://127.0.0.1:${i === 0 ? ports.api1 : ports.api2}`),
    uiUrl: `http://127.0.0.1:${ports.temporalUi}`,
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
    async startPair(name, settings) {
      const pairEnv = { ...env, TEMPORAL_TASK_QUEUE: `cluster-${name}`, ...settings };
      const pairPorts = { ...ports, api1: await freePort(), workerHttp1: await freePort() };
      const pairWorker = worker({ ...workerProcess(1, pairPorts, pairEnv), name: `worker-${name}` });
      const apiSpec = { ...apiProcess(1, pairPorts, pairEnv), name: `api-${name}` };
      const pairApi = api(apiSpec);
      processes.push(pairWorker, pairApi);
      await Promise.all([pairWorker.start(), pairApi.start()]);
      return {
        url: apiSpec.env.PUBLIC_URL!,
        async stop() {
          await pairApi.stop();
          await pairWorker.stop();
          for (const id of [reconcileScheduleId(pairEnv.TEMPORAL_TASK_QUEUE), retentionScheduleId(pairEnv.TEMPORAL_TASK_QUEUE)]) {
            await client.schedule.getHandle(id).delete().catch(() => undefined);
          }
        },
      };
    },
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
