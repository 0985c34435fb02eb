import crypto from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../../src/config';
import { createLogger, type Logger } from '../../src/logger';
import { connectDb, type Db } from '../../src/store/connect';
import { keyringFromConfig, type Keyring } from '../../src/store/secrets';
import { createApp } from '../../src/http/app';
import { answerClientErrors } from '../../src/http/client-errors';
import { createWorker, type RunningWorkerParts } from '../../src/temporal/worker';
import { installTemporalRuntime } from '../../src/temporal/runtime';
import { testEnv } from './env';
import { startFerretDb } from './ferretdb';
import { startTemporalDevServer } from './temporal-dev-server';
import { startFakeProvider, type FakeProvider } from './fake-provider';
import { LogSink } from './log-sink';
import { freePort } from './net';

/**
 * The real stack, started once per test run by the root hooks (test/setup.ts): a Temporal dev server, FerretDB
 * (or the servers named by TEMPORAL_ADDRESS / MONGO_URL), the fake model provider, one worker and the API on a
 * free port. Every component logs into `logs`, which tests read like an operator would.
 */
export interface Stack {
  env: Record<string, string>;
  config: Config;
  logger: Logger;
  logs: LogSink;
  db: Db;
  keyring: Keyring;
  temporal: Client;
  fake: FakeProvider;
  apiUrl: string;
  /** The shared worker; tests that kill a worker start their own with `startWorker`. */
  worker: RunningWorker;
  /** `parts.db`: the worker's own connection (a test watching the commands a worker sends); else the stack's. */
  startWorker(overrides?: Record<string, string>, parts?: { db?: Db }): Promise<RunningWorker>;
  /** A config with overrides on top of the stack's environment. */
  configWith(overrides: Record<string, string>): Config;
}

export interface RunningWorker {
  worker: RunningWorkerParts;
  stop(): Promise<void>;
}

/** Operator-wide provider keys, as OPENAI_API_KEY / ANTHROPIC_API_KEY would set them. */
export const OPERATOR_KEYS = { OPENAI_API_KEY: 'sk-operator-openai-0123456789', ANTHROPIC_API_KEY: 'sk-operator-anthropic-0123456789' };

let stack: Stack | undefined;
let teardown: Array<() => Promise<unknown>> = [];

export function getStack(): Stack {
  if (!stack) throw new Error('the test stack is not started (test/setup.ts root hooks)');
  return stack;
}

export async function startStack(): Promise<Stack> {
  const logs = new LogSink();
  const logger = createLogger({ level: 'debug', name: 'test', destination: logs });
  // Before anything creates the Temporal runtime: the SDK's own logs go to the sink, not the console.
  installTemporalRuntime(logger);
  const fake = await startFakeProvider();
  teardown.push(() => fake.close());

  let mongoUrl: string;
  if (testEnv.mongoUrl) {
    const u = new URL(testEnv.mongoUrl);
    u.pathname = `/ptr_test_${crypto.randomBytes(4).toString('hex')}`;
    mongoUrl = u.toString();
  } else {
    if (!testEnv.ferretdbBin) throw new Error('set FERRETDB_BIN or MONGO_URL (scripts/test.sh sets them)');
    const ferret = await startFerretDb(testEnv.ferretdbBin);
    teardown.push(() => ferret.stop());
    mongoUrl = `${ferret.url}ptr_test`;
  }

  let temporalEnv: TestWorkflowEnvironment;
  if (testEnv.temporalAddress) {
    temporalEnv = await TestWorkflowEnvironment.createFromExistingServer({
      address: testEnv.temporalAddress,
      namespace: testEnv.temporalNamespace,
    });
  } else {
    if (!testEnv.temporalCli) throw new Error('set TEMPORAL_CLI or TEMPORAL_ADDRESS (scripts/test.sh sets them)');
    temporalEnv = await startTemporalDevServer({
      cli: testEnv.temporalCli,
      extraArgs: ['--log-level', 'error'],
      log: (line) => process.stderr.write(`[test] ${line}\n`),
    });
  }
  teardown.push(() => temporalEnv.teardown());
  const address = temporalEnv.connection.options.address;

  const port = await freePort();
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'json',
    HOST: '127.0.0.1',
    PORT: String(port),
    MONGO_URL: mongoUrl,
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: temporalEnv.namespace ?? 'default',
    TEMPORAL_TASK_QUEUE: `test-${crypto.randomBytes(4).toString('hex')}`,
    MASTER_KEY: `test-k1:${crypto.randomBytes(32).toString('base64')}`,
    SIGNING_SECRET: crypto.randomBytes(32).toString('hex'),
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    ANTHROPIC_BASE_URL: fake.anthropicBaseUrl,
    SESSION_CACHE_MS: '200',
  };
  const config = loadConfig(env);
  const db = await connectDb(config.MONGO_URL);
  teardown.push(async () => {
    if (testEnv.mongoUrl) await db.conn.dropDatabase();
    await db.close();
  });
  const keyring = keyringFromConfig(config);
  const temporal = temporalEnv.client;

  const startWorker = async (overrides: Record<string, string> = {}, parts: { db?: Db } = {}): Promise<RunningWorker> => {
    const workerConfig = loadConfig({ ...env, ...overrides });
    const worker = await createWorker({ config: workerConfig, logger, db: parts.db ?? db, keyring });
    const running = worker.run();
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await worker.close();
    };
    teardown.unshift(stop);
    return { worker, stop };
  };
  // The worker knows the operator's keys (tasks saved without their own key use them); the stack's API does not,
  // so tests of "no key at all" see the API refuse, and tests that need operator keys start an API with them.
  const worker = await startWorker(OPERATOR_KEYS);

  const app = createApp({ config, logger, db, keyring, temporal });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
    answerClientErrors(s);
  });
  teardown.unshift(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  stack = {
    env,
    config,
    logger,
    logs,
    db,
    keyring,
    temporal,
    fake,
    apiUrl,
    worker,
    startWorker,
    configWith: (overrides) => loadConfig({ ...env, ...overrides }),
  };
  return stack;
}

/** Runs `step` when the stack stops (before the parts it was started on): for what a test starts beside the stack. */
export function atTeardown(step: () => Promise<unknown>): void {
  teardown.unshift(step);
}

export async function stopStack(): Promise<void> {
  const steps = teardown;
  teardown = [];
  stack = undefined;
  for (const step of steps) {
    await step().catch((err: Error) => console.error(`teardown: ${err.message}`));
  }
}
