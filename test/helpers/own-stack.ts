import crypto from 'node:crypto';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { loadConfig, type Config } from '../../src/config';
import { createApp } from '../../src/http/app';
import { connectDb, type Db } from '../../src/store/connect';
import { keyringFromConfig } from '../../src/store/secrets';
import { connectTemporal } from '../../src/temporal/client';
import { createWorker, type RunningWorkerParts } from '../../src/temporal/worker';
import { testEnv } from './env';
import { startFerretDb } from './ferretdb';
import { ManagedProcess, temporalDevSpec } from './managed-process';
import { freePort } from './net';
import { waitFor } from '../../src/cli/dev-processes';
import { getStack } from './stack';

/**
 * A stack of its own, for tests that stall a dependency: a Temporal dev server and a FerretDB this harness starts as
 * processes (so it can SIGSTOP and SIGCONT them), a worker and an API wired as the services wire themselves (every
 * call bounded by DEPENDENCY_TIMEOUT_MS), and the shared stack's fake provider. Stopped with `stop()`.
 */
export interface OwnStack {
  config: Config;
  db: Db;
  temporal: Client;
  apiUrl: string;
  /** Stops (SIGSTOP) or resumes (SIGCONT) a server: a stall, not a crash. */
  stall(server: 'mongodb' | 'temporal'): void;
  resume(server: 'mongodb' | 'temporal'): void;
  stop(): Promise<void>;
}

export async function startOwnStack(overrides: Record<string, string> = {}): Promise<OwnStack> {
  if (!testEnv.temporalCli || !testEnv.ferretdbBin) throw new Error('stall tests start their own servers: set TEMPORAL_CLI and FERRETDB_BIN');
  const stopping: Array<() => Promise<unknown>> = [];
  // A server a failed test left stalled is resumed first: the worker and the API would wait on it to stop.
  let resumeAll = () => undefined as void;
  const stop = async () => {
    resumeAll();
    for (const step of stopping.splice(0).reverse()) await step().catch(() => undefined);
  };
  try {
    const ferret = await startFerretDb(testEnv.ferretdbBin);
    stopping.push(() => ferret.stop());
    const temporalServer = await startTemporalServer(testEnv.temporalCli);
    stopping.push(() => temporalServer.stop());
    const pids = { mongodb: ferret.pid, temporal: temporalServer.pid };
    const signal = (server: keyof typeof pids, sig: NodeJS.Signals) => process.kill(pids[server], sig);
    resumeAll = () => {
      for (const server of Object.keys(pids) as Array<keyof typeof pids>) {
        try {
          signal(server, 'SIGCONT');
        } catch {
          // Already gone.
        }
      }
    };

    // Listen first, so PUBLIC_URL (what the API's answers are built from) is its own address.
    const server: Server = await new Promise((resolve) => {
      const s = http.createServer().listen(0, '127.0.0.1', () => resolve(s));
    });
    stopping.push(() => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    });
    const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { env, logger } = getStack();
    const config = loadConfig({
      ...env,
      MONGO_URL: `${ferret.url}own`,
      TEMPORAL_ADDRESS: temporalServer.address,
      TEMPORAL_TASK_QUEUE: `own-${crypto.randomBytes(4).toString('hex')}`,
      PUBLIC_URL: apiUrl,
      OPENAI_API_KEY: 'sk-own-stack-operator',
      ...overrides,
    });
    const keyring = keyringFromConfig(config);
    const db = await connectDb(config.MONGO_URL, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS });
    stopping.push(() => db.close());
    const workerDb = await connectDb(config.MONGO_URL, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS });
    stopping.push(() => workerDb.close());
    const temporal = await connectTemporal(config);
    stopping.push(() => temporal.connection.close());
    // The frontend port opens before the namespace is registered.
    await waitFor(() => temporal.workflowService.describeNamespace({ namespace: config.TEMPORAL_NAMESPACE }).then(() => true), 'the dev server\'s namespace', 30_000);
    const worker: RunningWorkerParts = await createWorker({ config, logger, db: workerDb, keyring });
    const running = worker.run();
    stopping.push(async () => {
      worker.shutdown();
      await running.catch(() => undefined);
      await worker.close();
    });
    server.on('request', createApp({ config, logger, db, keyring, temporal }).callback());
    return {
      config,
      db,
      temporal,
      apiUrl,
      stall: (which) => signal(which, 'SIGSTOP'),
      resume: (which) => signal(which, 'SIGCONT'),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** `temporal server start-dev` as a process of this harness (no Web UI; in-memory). */
async function startTemporalServer(cli: string): Promise<{ address: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const server = new ManagedProcess('temporal', temporalDevSpec({ cli, port }));
  await server.start();
  return { address: `127.0.0.1:${port}`, pid: server.pid!, stop: () => server.stop(10_000) };
}
