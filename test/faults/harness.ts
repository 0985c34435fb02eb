import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Webhook } from 'standardwebhooks';
import { expect } from 'chai';
import mongoose from 'mongoose';
import { signedUrl, until } from '../helpers/runs';
import { connectDb } from '../../src/store/connect';
import { createSession } from '../../src/store/sessions';
import { taskBody, uniqueUser } from '../helpers/api';
import { testEnv } from '../helpers/env';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider';
import { apiSpec, ferretDbSpec, ManagedProcess, temporalDevSpec, workerSpec } from '../helpers/managed-process';
import { freePort } from '../helpers/net';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver';
import { countedFetch, countingApi, owners, trigger, type CountingApi } from './client';
import { closedRun, ledger, type ClosedRun } from './ledger';
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
  /**
   * Deliveries the webhook receiver got: the run each names (its workflow id) and the run as the payload shows it, or
   * why the delivery did not verify with its task's secret; and what came (headers and body), for the secret scan.
   */
  webhookDeliveries: Array<{ workflowId?: string; run?: ClosedRun; error?: string; received: string }>;
  webhookUrl: string;
  /** The collector the API and the worker send their traces to (OTLP/HTTP protobuf, content capture off): scanned too. */
  traces: OtlpReceiver;
}

/**
 * Settings of the API and the worker: short retries so faults show (and pass) within seconds. The dependency deadline
 * is its default (DEPENDENCY_TIMEOUT_MS, 3 s: at 1 s, 200 triggers at once against FerretDB turn into a storm of 503s
 * and retries), set here because the suite times answers against it; a lost worker is noticed after 10 s (at 3 s, a
 * busy two-core machine misses the heartbeats of live workers, and their calls are made again). RUN_RECORD_CACHE_MS
 * is set because the suite waits it out before reading closed runs again.
 */
const SERVICE_SETTINGS = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'debug',
  LOG_FORMAT: 'json',
  DEPENDENCY_TIMEOUT_MS: '3000',
  RUN_RECORD_CACHE_MS: '2000',
  LIVE_READ_WAIT_MS: '300',
  SESSION_CACHE_MS: '10000',
  RECONCILE_INTERVAL_MS: '2000',
  PROVIDER_TIMEOUT_MS: '15000',
  PROVIDER_HEARTBEAT_TIMEOUT_MS: '10000',
  PROVIDER_RETRY_INITIAL_MS: '200',
  PROVIDER_RETRY_MAX_MS: '3000',
  PROVIDER_MAX_ATTEMPTS: '10',
  SERVLET_CALL_TIMEOUT_MS: '6000',
  // The suite's one client stands in for many (200 triggers at once): no cap on the connections of its address.
  CONNECTIONS_PER_ADDRESS: '0',
};

/**
 * While a dependency does not answer, a request gives up after DEPENDENCY_TIMEOUT_MS per call it waits on (one that
 * reads the store twice, twice that), with a margin for a loaded 2-core machine: well short of a hang, which the
 * client's own 30 s abort catches.
 */
const ANSWER_MARGIN_MS = 2_000;
ledger.slowAfterMs = 2 * Number(SERVICE_SETTINGS.DEPENDENCY_TIMEOUT_MS) + ANSWER_MARGIN_MS;

let stack: FaultStack | undefined;
let stopping = false;
let failed = false;
const cleanup: Array<() => Promise<unknown>> = [];
/** Restarts of crashed services not yet made: cleared at teardown. */
const restarts = new Set<NodeJS.Timeout>();

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
      // Checked as a receiver would, on arrival (the signature's timestamp has a tolerance of minutes), with the
      // secret of the task the body names: a delivery signed with another task's secret does not verify.
      const body = Buffer.concat(chunks).toString('utf8');
      const received = `${JSON.stringify(req.headers)}\n${body}`;
      try {
        const task = String((JSON.parse(body) as { task?: unknown }).task);
        const secret = ledger.webhookTasks.get(task);
        if (!secret) throw new Error(`a delivery for ${task}, which has no webhook`);
        const payload = new Webhook(secret).verify(body, req.headers as Record<string, string>) as { task: string; run: { name: string } };
        webhookDeliveries.push({ workflowId: `run/${payload.task}/${payload.run.name}`, run: closedRun(payload.run), received });
      } catch (err) {
        webhookDeliveries.push({ error: (err as Error).message, received });
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanup.unshift(() => new Promise((r) => receiver.close(r)));

  // Tracing on, as an operator with a collector runs it: the spans are scanned for secrets with everything else.
  const traces = await startOtlpReceiver();
  cleanup.unshift(() => traces.close());

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
    // MCP installs reach server-everything on loopback (worker.fault.ts), which the network guard refuses otherwise.
    MCP_ALLOWLIST: '127.0.0.1',
    WEBHOOK_RETRY_INITIAL_MS: '500',
    OTEL_EXPORTER_OTLP_ENDPOINT: traces.url,
  };

  const mongodb = new ManagedProcess('ferretdb', ferretDbSpec({ bin: ferretdbBin, dir: path.join(dataDir, 'ferretdb'), port: mongoPort, logLevel: 'warn' }), logDir);
  const temporal = new ManagedProcess('temporal', temporalDevSpec({ cli: temporalCli, port: temporalPort, dbFile: path.join(dataDir, 'temporal.db'), logLevel: 'warn' }), logDir);
  const api = new ManagedProcess('api', apiSpec(env, apiUrl), logDir);
  const worker = new ManagedProcess('worker', workerSpec(env), logDir);
  const processes = [mongodb, temporal, api, worker];
  for (const p of processes) {
    p.onCrash = (exit) => {
      ledger.notes.push(`${exit.name} (start ${exit.start}) crashed: code ${exit.code}, signal ${exit.signal} during "${ledger.scenario}"`);
      // A supervisor starts a crashed service again; the servers are left down (the suite then fails loudly).
      if (stopping || (p !== api && p !== worker)) return;
      const timer = setTimeout(() => {
        restarts.delete(timer);
        if (!stopping) void p.ensureRunning().catch((err: Error) => ledger.notes.push(`restarting ${p.name}: ${err.message}`));
      }, 1000);
      restarts.add(timer);
    };
  }
  // Should the test process end without its teardown (an uncaught error, mocha's --exit, Ctrl-C), no server outlives it.
  const killAll = () => {
    for (const p of processes) p.killNow();
  };
  process.once('exit', killAll);
  // A signal ends the process without 'exit' (mocha has no handler of its own): a stalled server would stay stopped.
  const onSignal = (signal: NodeJS.Signals) => {
    killAll();
    process.exit(128 + (os.constants.signals[signal] ?? 15));
  };
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  for (const signal of signals) process.once(signal, onSignal);
  cleanup.unshift(async () => {
    for (const timer of restarts) clearTimeout(timer);
    restarts.clear();
    for (const p of [...processes].reverse()) await p.stop().catch(() => undefined);
    process.off('exit', killAll);
    for (const signal of signals) process.off(signal, onSignal);
  });

  await Promise.all([mongodb.start(), temporal.start()]);
  await Promise.all([worker.start(), api.start()]);
  stack = { apiUrl, env, mongoUrl, temporalAddress, namespace: 'default', fake, script, temporal, mongodb, api, worker, processes, logDir, webhookDeliveries, webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, traces };
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

/** Reads the suite's database directly, through the driver (not the API): what the service left there. */
export async function withMongo<T>(read: (db: mongoose.mongo.Db) => Promise<T>): Promise<T> {
  const client = new mongoose.mongo.MongoClient(faultStack().mongoUrl, { serverSelectionTimeoutMS: 10_000 });
  try {
    await client.connect();
    return await read(client.db());
  } finally {
    await client.close();
  }
}

/** A new user with a session (made as `npm run session` makes one) and a counting client for it. */
export async function faultUser(prefix: string): Promise<{ username: string; api: CountingApi }> {
  const { mongoUrl, apiUrl } = faultStack();
  const username = uniqueUser(prefix);
  const db = await connectDb(mongoUrl);
  try {
    const { id } = await createSession(db.models, username, 24);
    const api = countingApi(id, apiUrl);
    owners.set(username, api);
    await faultToken(api, apiUrl);
    return { username, api };
  } finally {
    await db.close();
  }
}

/**
 * An access token of the user (recorded for the scan), used once: the scan finds it anywhere but in the one answer
 * that shows it to its owner (`POST /api/tokens/~`).
 */
async function faultToken(api: CountingApi, apiUrl: string) {
  const made = await api.post('/api/tokens/~', { name: 'fault', scopes: ['tasks:read', 'runs:read'] });
  expect(made.status, made.text).to.equal(201);
  const token = ledger.secret('access token', made.body.token as string);
  const used = await countedFetch(`${apiUrl}/api/tasks/~`, { headers: { authorization: `Bearer ${token}` } });
  expect(used.status, used.text).to.equal(200);
}

/**
 * A task (prompt `Say {{ text }}`, so runs are told what to do by their trigger text) and a signed URL for it. Its
 * key is a fresh provider key of its own (recorded for the scan), or the operator's when `key` is 'operator'. With
 * `webhook`, its runs' ends are delivered to the harness's receiver, signed with a fresh secret of its own (recorded
 * for the scan, and in `ledger.webhookTasks` for the receiver and the final accounts).
 */
export async function faultTask(api: CountingApi, name: string, options: { runner?: 'openai' | 'anthropic'; key?: 'own' | 'operator'; webhook?: boolean } = {}) {
  const key = options.key === 'operator' ? undefined : ledger.secret('provider key', `sk-fault-${name}-${crypto.randomBytes(16).toString('hex')}`);
  const body: Record<string, unknown> = taskBody(options.runner ?? 'openai', 'Say {{ text }}', 'fault-model', key);
  let secret: string | undefined;
  if (options.webhook) {
    secret = ledger.secret('webhook secret', `whsec_${crypto.randomBytes(24).toString('base64')}`);
    body.webhook = { url: faultStack().webhookUrl, secret };
  }
  const put = await api.put(`/api/tasks/~/default/${name}`, body);
  expect(put.status, put.text).to.be.oneOf([200, 201]);
  if (secret) {
    const task = await api.get(`/api/tasks/~/default/${name}`);
    expect(task.body?.webhook, `the webhook of ${name}: ${task.text}`).to.deep.equal({ url: faultStack().webhookUrl, secret_set: true });
    ledger.webhookTasks.set(task.body.slug, secret);
  }
  return signedUrl(api, 'default', name);
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
  /**
   * Every scenario starts on a whole stack, whatever the one before it left (a test that failed between its fault
   * and its repair): stalled servers go on, stopped or killed ones start again, servers first.
   */
  async beforeEach(this: Mocha.Context) {
    this.timeout(300_000);
    for (const p of faultStack().processes) {
      if (p.stalled) {
        p.resume();
        ledger.notes.push(`${p.name} was left stalled before "${this.currentTest?.fullTitle()}": resumed`);
      }
      if (!p.running) {
        ledger.notes.push(`${p.name} was left down before "${this.currentTest?.fullTitle()}": started`);
        await p.ensureRunning();
      }
    }
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
