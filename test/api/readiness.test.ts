import crypto from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'chai';
import { createApp } from '../../src/http/app';
import { connectDb, type Db } from '../../src/store/connect';
import { startWorkerHttp } from '../../src/worker-http';
import { api as apiFor, readResponse, signedIn, startApi } from '../helpers/api';
import { freePort } from '../helpers/net';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { startWorkerProcess } from '../helpers/worker-process';

/** The deadline of every check in these tests: short, so a stalled dependency costs half a second. */
const TIMEOUT_MS = 500;

const get = async (url: string) => readResponse(await fetch(url));

/** An API on port 0 with the stack's parts except those given (a database or Temporal behind a proxy). */
async function apiWith(parts: { db?: Db; temporal?: Client }): Promise<{ url: string; close(): void }> {
  const stack = getStack();
  const config = stack.configWith({ DEPENDENCY_TIMEOUT_MS: String(TIMEOUT_MS) });
  const app = createApp({ config, logger: stack.logger, db: parts.db ?? stack.db, keyring: stack.keyring, temporal: parts.temporal ?? stack.temporal });
  const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Reads /readyz and how long it took to answer. */
async function readyz(baseUrl: string) {
  const start = performance.now();
  const res = await get(`${baseUrl}/readyz`);
  return { ...res, ms: performance.now() - start };
}

/** The value of the first sample of `name` whose labels include every one given (Prometheus text). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => have.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}

describe('readiness and metrics', () => {
  describe('the API', () => {
    it('answers /readyz with 200 when MongoDB and Temporal both answer', async () => {
      const res = await get(`${getStack().apiUrl}/readyz`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ mongodb: 'ok', temporal: 'ok' });
      expect(res.headers.get('retry-after')).to.equal(null);
    });

    it('answers /readyz with 503 naming MongoDB within the deadline when MongoDB stops answering, and /healthz still 200', async () => {
      const stack = getStack();
      const mongoUrl = new URL(stack.config.MONGO_URL);
      const proxy = await startTcpProxy(mongoUrl.host);
      mongoUrl.host = proxy.address;
      // Direct: a replica set's members would otherwise be reached at their own addresses, around the proxy.
      mongoUrl.searchParams.set('directConnection', 'true');
      const db = await connectDb(mongoUrl.toString());
      const app = await apiWith({ db });
      try {
        expect((await readyz(app.url)).body).to.deep.equal({ mongodb: 'ok', temporal: 'ok' });
        proxy.stall();
        const res = await readyz(app.url);
        expect(res.status, res.text).to.equal(503);
        expect(res.headers.get('retry-after')).to.equal('1');
        expect(res.body).to.deep.equal({ mongodb: `did not answer within ${TIMEOUT_MS} ms`, temporal: 'ok' });
        expect(res.ms).to.be.below(TIMEOUT_MS + 1000);
        expect((await get(`${app.url}/healthz`)).status, 'liveness asks no dependency').to.equal(200);
      } finally {
        app.close();
        await proxy.close();
        await db.close();
      }
    });

    it('answers /readyz with 503 naming Temporal within the deadline when Temporal stops answering', async () => {
      const proxy = await startTcpProxy(getStack().config.TEMPORAL_ADDRESS);
      const connection = await Connection.connect({ address: proxy.address });
      const app = await apiWith({ temporal: new Client({ connection, namespace: getStack().config.TEMPORAL_NAMESPACE }) });
      try {
        expect((await readyz(app.url)).status).to.equal(200);
        proxy.stall();
        const res = await readyz(app.url);
        expect(res.status, res.text).to.equal(503);
        expect(res.headers.get('retry-after')).to.equal('1');
        expect(res.body).to.deep.equal({ mongodb: 'ok', temporal: `did not answer within ${TIMEOUT_MS} ms` });
        expect(res.ms).to.be.below(TIMEOUT_MS + 1000);
      } finally {
        app.close();
        await proxy.close();
        await connection.close().catch(() => undefined);
      }
    });

    it('answers /readyz with 503 naming Temporal, without its address, when nothing listens there', async () => {
      const port = await freePort();
      // No gRPC retries (they would go on past the test), so the refusal comes at once.
      const connection = Connection.lazy({ address: `127.0.0.1:${port}`, interceptors: [] });
      const app = await apiWith({ temporal: new Client({ connection }) });
      try {
        const res = await readyz(app.url);
        expect(res.status, res.text).to.equal(503);
        expect(res.body.mongodb).to.equal('ok');
        expect(res.body.temporal).to.equal('unavailable (gRPC UNAVAILABLE)');
        expect(res.text).not.to.contain(String(port));
        expect(res.ms).to.be.below(TIMEOUT_MS + 1000);
      } finally {
        app.close();
        await connection.close().catch(() => undefined);
      }
    });

    it('serves process metrics, the live-run query counter and request latency by route pattern on /metrics', async () => {
      const { api } = await signedIn();
      const { apiUrl } = getStack();
      await createTask(api, 'default', 'metered');
      const { body } = await postSigned(await signedUrl(api, 'default', 'metered'), { text: 'x' });
      await waitForRun(api, body.url);
      const res = await get(`${apiUrl}/metrics`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      // The benchmark's own reading of the counter (bench/run.ts).
      expect(/^ptr_live_run_queries_total (\d+)/m.exec(res.text)?.[1], 'the counter as the benchmark reads it').to.match(/^\d+$/);
      expect(sample(res.text, 'process_resident_memory_bytes')).to.be.above(0);
      expect(sample(res.text, 'nodejs_eventloop_lag_p99_seconds')).to.be.a('number');
      const runReads = { method: 'GET', route: '/api/runs/:user/:profile/:task/:run', status_class: '2xx' };
      expect(sample(res.text, 'ptr_http_request_duration_seconds_count', runReads), res.text).to.be.above(0);
      expect(sample(res.text, 'ptr_http_request_duration_seconds_bucket', { ...runReads, le: '+Inf' })).to.be.above(0);
      expect(res.text, 'no label holds a run name').not.to.contain(new URL(body.url).pathname);
    });

    it('labels requests no route matched as unmatched, never by their path', async () => {
      const { apiUrl } = getStack();
      const path = `/nowhere-${crypto.randomBytes(4).toString('hex')}`;
      expect((await get(`${apiUrl}${path}`)).status).to.equal(404);
      const { text } = await get(`${apiUrl}/metrics`);
      expect(sample(text, 'ptr_http_request_duration_seconds_count', { route: 'unmatched', status_class: '4xx' })).to.be.above(0);
      expect(text).not.to.contain(path);
    });

    it('labels a request refused before its handler (no session) with the route it was sent to', async () => {
      const { apiUrl } = getStack();
      expect((await get(`${apiUrl}/api/runs/~/default/refused/r1`)).status).to.equal(401);
      const { text } = await get(`${apiUrl}/metrics`);
      const refused = { method: 'GET', route: '/api/runs/:user/:profile/:task/:run', status_class: '4xx' };
      expect(sample(text, 'ptr_http_request_duration_seconds_count', refused), text).to.be.above(0);
    });
  });

  describe('a worker', () => {
    const children: ChildProcess[] = [];
    afterEach(() => {
      for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });

    it('serves /healthz, /readyz and /metrics with its activities on WORKER_HTTP_PORT, and closes it on shutdown', async function () {
      this.timeout(90_000);
      const { sessionId } = await signedIn();
      const { env } = getStack();
      const queue = `http-${crypto.randomBytes(4).toString('hex')}`;
      const port = await freePort();
      const child = await startWorkerProcess({ ...env, TEMPORAL_TASK_QUEUE: queue, WORKER_HTTP_PORT: String(port), LOG_LEVEL: 'info' });
      children.push(child);
      // The delay is long here, so the run's start is written with its end however busy the machine.
      const server = await startApi({ TEMPORAL_TASK_QUEUE: queue, RUN_START_WRITE_DELAY_MS: '10000' });
      const workerUrl = `http://127.0.0.1:${port}`;
      try {
        // "worker polling" is logged just before its workers start running.
        let health = await get(`${workerUrl}/healthz`);
        for (let i = 0; i < 50 && health.status !== 200; i++) {
          await new Promise((r) => setTimeout(r, 100));
          health = await get(`${workerUrl}/healthz`);
        }
        expect(health.status, health.text).to.equal(200);
        const ready = await get(`${workerUrl}/readyz`);
        expect(ready.status, ready.text).to.equal(200);
        expect(ready.body).to.deep.equal({ mongodb: 'ok', temporal: 'ok', worker: 'ok' });

        const api = apiFor(sessionId, server.url);
        await createTask(api, 'default', 'worked');
        const { body } = await postSigned(await signedUrl(api, 'default', 'worked'), { text: 'x' });
        expect((await waitForRun(api, body.url)).status).to.equal('ready');
        const { text } = await get(`${workerUrl}/metrics`);
        // A one-turn run is one activity and one write: its first model call prepares the run, asks the model and
        // records the run's start with its end.
        expect(sample(text, 'ptr_activities_total', { activity: 'firstModelCall', outcome: 'completed' }), text).to.equal(1);
        expect(sample(text, 'ptr_activities_in_flight', { activity: 'firstModelCall' })).to.equal(0);
        expect(text).not.to.match(/ptr_activities_total\{activity="(recordRun|prepareStart|prepareRun|callModel|prepareAndCallModel)"/);
        expect(sample(text, 'ptr_provider_call_duration_seconds_count', { runner: 'openai', outcome: 'completed' })).to.equal(1);
        // The fake provider reports 1 input and 1 output token per answer.
        expect(sample(text, 'ptr_provider_tokens_total', { runner: 'openai', model: 'test-model', kind: 'input' })).to.equal(1);
        expect(sample(text, 'ptr_provider_tokens_total', { runner: 'openai', model: 'test-model', kind: 'output' })).to.equal(1);
        expect(sample(text, 'ptr_run_status_transitions_total', { to: 'running' })).to.equal(1);
        expect(sample(text, 'ptr_run_status_transitions_total', { to: 'ready' })).to.equal(1);
        expect(sample(text, 'process_resident_memory_bytes')).to.be.above(0);

        const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
        child.kill('SIGTERM');
        expect(await exited, 'a clean shutdown').to.equal(0);
        const after = await fetch(`${workerUrl}/healthz`).catch((err: Error & { cause?: { code?: string } }) => err.cause?.code);
        expect(after).to.equal('ECONNREFUSED');
      } finally {
        await server.close();
      }
    });

    it('answers /healthz and /readyz with 503 before its workers exist and once they stopped', async function () {
      this.timeout(60_000);
      const stack = getStack();
      let worker: Awaited<ReturnType<typeof stack.startWorker>> | undefined;
      const config = stack.configWith({ DEPENDENCY_TIMEOUT_MS: String(TIMEOUT_MS) });
      const server = await startWorkerHttp({ config, logger: stack.logger, db: stack.db, worker: () => worker?.worker }, 0);
      const url = `http://127.0.0.1:${server.port}`;
      try {
        const starting = await get(`${url}/healthz`);
        expect(starting.status).to.equal(503);
        expect(starting.body).to.deep.equal({ ok: false, worker: 'STARTING' });
        const notYet = await get(`${url}/readyz`);
        expect(notYet.status).to.equal(503);
        expect(notYet.headers.get('retry-after')).to.equal('1');
        expect(notYet.body.worker).to.equal('not running (STARTING)');
        expect(sample((await get(`${url}/metrics`)).text, 'process_resident_memory_bytes'), 'process metrics meanwhile').to.be.above(0);

        worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: `http-${crypto.randomBytes(4).toString('hex')}` });
        let health = await get(`${url}/healthz`);
        for (let i = 0; i < 50 && health.status !== 200; i++) {
          await new Promise((r) => setTimeout(r, 100));
          health = await get(`${url}/healthz`);
        }
        expect(health.body).to.deep.equal({ ok: true });
        expect((await get(`${url}/readyz`)).body).to.deep.equal({ mongodb: 'ok', temporal: 'ok', worker: 'ok' });

        await worker.stop();
        const stopped = await get(`${url}/healthz`);
        expect(stopped.status).to.equal(503);
        expect(stopped.body).to.deep.equal({ ok: false, worker: 'STOPPED' });
        const gone = await get(`${url}/readyz`);
        expect(gone.status).to.equal(503);
        expect(gone.body.worker).to.equal('not running (STOPPED)');
        expect(gone.body.mongodb).to.equal('ok');
      } finally {
        await server.close();
      }
    });

    it('answers unknown paths with 404 and other methods with 405, in the error format', async () => {
      const stack = getStack();
      const server = await startWorkerHttp({ config: stack.config, logger: stack.logger, db: stack.db, worker: () => stack.worker.worker }, 0);
      const url = `http://127.0.0.1:${server.port}`;
      try {
        const missing = await get(`${url}/nowhere`);
        expect(missing.status).to.equal(404);
        expect(missing.body).to.deep.equal({ error: { code: 'not_found', message: 'no route for GET /nowhere' } });
        const posted = await readResponse(await fetch(`${url}/healthz`, { method: 'POST' }));
        expect(posted.status).to.equal(405);
        expect(posted.headers.get('allow')).to.equal('GET, HEAD');
        expect(posted.body.error.code).to.equal('method_not_allowed');
      } finally {
        await server.close();
      }
    });
  });
});
