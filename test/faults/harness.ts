import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import { expect } from 'chai';
import { until } from '../helpers/runs';
import { waitFor } from '../../src/cli/dev-processes';
import { connectDb } from '../../src/store/connect';
import { createSession } from '../../src/store/sessions';
import { searchAttributeFlags } from '../../src/temporal/search-attributes';
import type { Api } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { freePort, waitForPort } from '../helpers/net';
import { countingApi, owners, trigger } from './client';
import { ledger } from './ledger';
import { ManagedProcess } from './processes';
import { providerScript, type ProviderScript } from './provider-script';

/**
 * The fault suite's own stack, every server a process of this harness: the Temporal dev server on a database file
 * and FerretDB on its own SQLite directory (both restart with their data, on the same ports), the API
 * (src/server.ts) and one worker (src/worker.ts) as operators run them, and the fake model provider (loopback, in
 * this process). Every process's output goes to test-results/faults/logs/ for the final scan. An API or worker
 * that crashes is noted and started again, as a supervisor would; the final test fails on any crash.
 */
export interface FaultStack {
  apiUrl: string;
  env: Record<string, string>;
  mongoUrl: string;
  temporalAddress: string;
  namespace: string;
  fake: FakeProvider;
  script: ProviderScript;
  temporal: ManagedProcess;
  mongodb: ManagedProcess;
  api: ManagedProcess;
  worker: ManagedProcess;
  processes: ManagedProcess[];
  logDir: string;
  /** Deliveries the webhook receiver got: the run each names, or why its signature did not verify. */
  webhookDeliveries: Array<{ run?: string; error?: string }>;
  webhookUrl: string;
}

/**
 * Settings of the API and the worker: short retries so faults show (and pass) within seconds. The dependency deadline
 * stays at its default (DEPENDENCY_TIMEOUT_MS, 3 s: at 1 s, 200 triggers at once against FerretDB turn into a storm
 * of 503s and retries); a lost worker is noticed after 10 s (at 3 s, a busy two-core machine misses the heartbeats
 * of live workers, and their calls are made again).
 */
const SERVICE_SETTINGS = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'debug',
  LIVE_READ_WAIT_MS: '300',
  SESSION_CACHE_MS: '10000',
  RECONCILE_INTERVAL_MS: '2000',
  PROVIDER_TIMEOUT_MS: '15000',
  PROVIDER_HEARTBEAT_TIMEOUT_MS: '10000',
  PROVIDER_RETRY_INITIAL_MS: '200',
  PROVIDER_RETRY_MAX_MS: '3000',
  PROVIDER_MAX_ATTEMPTS: '10',
  SERVLET_CALL_TIMEOUT_MS: '6000',
};

let stack: FaultStack | undefined;
let stopping = false;
let failed = false;
const cleanup: Array<() => Promise<unknown>> = [];

export function faultStack(): FaultStack {
  if (!stack) throw new Error('the fault stack is not started (test/faults/harness.ts root hooks)');
  return stack;
}

async function startFaultStack(): Promise<FaultStack> {
  const temporalCli = testEnv.temporalCli;
  const ferretdbBin = testEnv.ferretdbBin;
  if (!temporalCli || !ferretdbBin) throw new Error('the fault suite starts its own servers: set TEMPORAL_CLI and FERRETDB_BIN (scripts/install-tools.sh)');
  const logDir = path.resolve('test-results', 'faults', 'logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-faults-'));
  cleanup.push(async () => {
    // Kept when a test failed, to look into: the servers' data as the suite left it.
    if (failed) ledger.notes.push(`data kept for inspection: ${dataDir}`);
    else fs.rmSync(dataDir, { recursive: true, force: true });
  });
  fs.mkdirSync(path.join(dataDir, 'ferretdb'));

  const script = providerScript();
  const fake = await startFakeProvider();
  fake.script(script.responder);
  cleanup.unshift(() => fake.close());
  const webhookDeliveries: FaultStack['webhookDeliveries'] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Checked as a receiver would, on arrival (the signature's timestamp has a tolerance of minutes).
      const secret = ledger.secrets.find((s) => s.kind === 'webhook secret')?.value;
      try {
        if (!secret) throw new Error('no webhook secret was set');
        const payload = new Webhook(secret).verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as { run?: { name?: string } };
        webhookDeliveries.push({ run: payload.run?.name });
      } catch (err) {
        webhookDeliveries.push({ error: (err as Error).message });
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanup.unshift(() => new Promise((r) => receiver.close(r)));

  const [mongoPort, temporalPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const mongoUrl = `mongodb://127.0.0.1:${mongoPort}/faults`;
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const env: Record<string, string> = {
    ...SERVICE_SETTINGS,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    PUBLIC_URL: apiUrl,
    MONGO_URL: mongoUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: 'faults',
    MASTER_KEY: `faults-k1:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    ANTHROPIC_BASE_URL: fake.anthropicBaseUrl,
    OPENAI_API_KEY: ledger.secret('provider key', `sk-operator-openai-${crypto.randomBytes(12).toString('hex')}`),
    ANTHROPIC_API_KEY: ledger.secret('provider key', `sk-ant-operator-${crypto.randomBytes(12).toString('hex')}`),
    // Webhook deliveries go to this process's receiver on loopback, which the network guard refuses otherwise.
    WEBHOOK_ALLOWLIST: '127.0.0.1',
    WEBHOOK_RETRY_INITIAL_MS: '500',
  };

  const mongodb = new ManagedProcess(
    'ferretdb',
    {
      command: ferretdbBin,
      args: [
        '--handler=sqlite', `--sqlite-url=file:${path.join(dataDir, 'ferretdb')}/?_txlock=immediate`, `--listen-addr=127.0.0.1:${mongoPort}`,
        '--state-dir=-', '--debug-addr=-', '--telemetry=disable', '--log-level=warn',
      ],
      ready: () => waitForPort(mongoPort, 30_000),
      readyTimeoutMs: 30_000,
    },
    logDir,
  );
  const temporal = new ManagedProcess(
    'temporal',
    {
      command: temporalCli,
      args: [
        'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(temporalPort), '--headless',
        '--db-filename', path.join(dataDir, 'temporal.db'), '--log-level', 'warn',
        '--dynamic-config-value', 'system.enableActivityEagerExecution=true', ...searchAttributeFlags(),
      ],
      ready: () => temporalReady(temporalPort),
      readyTimeoutMs: 90_000,
    },
    logDir,
  );
  // One node process each (not the tsx wrapper, which would leave its node child alive when killed).
  const node = (file: string) => ({ command: process.execPath, args: ['--import', 'tsx', file], env });
  const api = new ManagedProcess(
    'api',
    { ...node('src/server.ts'), ready: () => waitFor(async () => (await fetch(`${apiUrl}/healthz`)).ok, 'the API', 60_000), readyTimeoutMs: 60_000 },
    logDir,
  );
  const worker = new ManagedProcess(
    'worker',
    { ...node('src/worker.ts'), ready: (output) => waitFor(async () => output().includes('worker polling'), 'the worker', 120_000), readyTimeoutMs: 120_000 },
    logDir,
  );
  const processes = [mongodb, temporal, api, worker];
  for (const p of processes) {
    p.onCrash = (exit) => {
      ledger.notes.push(`${exit.name} (start ${exit.start}) crashed: code ${exit.code}, signal ${exit.signal} during "${ledger.scenario}"`);
      // A supervisor starts a crashed service again; the servers are left down (the suite then fails loudly).
      if (!stopping && (p === api || p === worker)) setTimeout(() => void p.start().catch((err: Error) => ledger.notes.push(`restarting ${p.name}: ${err.message}`)), 1000);
    };
  }
  cleanup.unshift(async () => {
    for (const p of [...processes].reverse()) await p.stop().catch(() => undefined);
  });

  await Promise.all([mongodb.start(), temporal.start()]);
  await Promise.all([worker.start(), api.start()]);
  stack = { apiUrl, env, mongoUrl, temporalAddress, namespace: 'default', fake, script, temporal, mongodb, api, worker, processes, logDir, webhookDeliveries, webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` };
  return stack;
}

let client: Client | undefined;

/** A Temporal client of the test process (reads histories, describes workflows); it reconnects across restarts. */
export async function temporalClient(): Promise<Client> {
  if (!client) {
    const { temporalAddress, namespace } = faultStack();
    const connection = await Connection.connect({ address: temporalAddress });
    client = new Client({ connection, namespace });
    cleanup.unshift(async () => {
      await connection.close();
      client = undefined;
    });
  }
  return client;
}

/** The frontend port opens before the namespace is registered: ready once the namespace answers. */
async function temporalReady(port: number): Promise<void> {
  await waitForPort(port, 60_000);
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    await waitFor(() => connection.workflowService.describeNamespace({ namespace: 'default' }).then(() => true), "the dev server's namespace", 60_000);
  } finally {
    await connection.close();
  }
}

/** A new user with a session (made as `npm run session` makes one) and a counting client for it. */
export async function faultUser(prefix: string): Promise<{ username: string; api: Api }> {
  const { mongoUrl, apiUrl } = faultStack();
  const username = `${prefix}-${crypto.randomBytes(4).toString('hex')}`;
  const db = await connectDb(mongoUrl);
  try {
    const { id } = await createSession(db.models, username, 24);
    const api = countingApi(id, apiUrl);
    owners.set(username, api);
    return { username, api };
  } finally {
    await db.close();
  }
}

/**
 * A task (prompt `Say {{ text }}`, so runs are told what to do by their trigger text) and a signed URL for it. Its
 * key is a fresh provider key of its own (recorded for the scan), or the operator's when `key` is 'operator'.
 */
export async function faultTask(api: Api, name: string, options: { runner?: 'openai' | 'anthropic'; key?: 'own' | 'operator'; webhook?: boolean } = {}) {
  const runner = options.runner ?? 'openai';
  const body: Record<string, unknown> = { runner, [runner]: { prompt: 'Say {{ text }}', model: 'fault-model' } };
  if (options.key !== 'operator') body.settings = { key: ledger.secret('provider key', `sk-fault-${name}-${crypto.randomBytes(16).toString('hex')}`) };
  // Issue 14 adds `webhook: {url, secret}` to the task body; until then the API ignores it as an unknown field.
  if (options.webhook) body.webhook = { url: faultStack().webhookUrl, secret: ledger.secret('webhook secret', `whsec_${crypto.randomBytes(24).toString('base64')}`) };
  let put = await api.put(`/api/tasks/~/default/${name}`, body);
  if (options.webhook && put.status === 400 && /webhook/.test(put.text)) {
    ledger.notes.push(`the task PUT refused the webhook (${put.text}); the task was saved without it`);
    delete body.webhook;
    put = await api.put(`/api/tasks/~/default/${name}`, body);
  }
  expect(put.status, put.text).to.be.oneOf([200, 201]);
  const signed = await api.post(`/api/tasks/~/default/${name}/signed`);
  expect(signed.status, signed.text).to.equal(200);
  return signed.body.url as string;
}

/** Runs whose provider calls the fake holds at `gate` until the test opens it; resolves once all are in flight. */
export async function heldRuns(url: string, gate: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${gate}-h-${i}`);
  await Promise.all(names.map(async (name) => expect((await trigger(url, `hold:${gate} ${name}`, name)).status).to.equal(201)));
  await until(`the calls held at ${gate} in flight`, () => faultStack().script.waiting(gate) === count, 60_000);
  return names;
}

/** Root hooks (test/faults/.mocharc.json): one stack for the suite; the summary is written whatever happened. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(300_000);
    await startFaultStack();
    ledger.scenario = 'suite';
  },
  afterEach(this: Mocha.Context) {
    if (this.currentTest?.state === 'failed') failed = true;
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(120_000);
    stopping = true;
    for (const step of cleanup.splice(0)) await step().catch((err: Error) => console.error(`fault suite teardown: ${err.message}`));
    stack = undefined;
    ledger.write();
  },
};
