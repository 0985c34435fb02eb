import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createApp } from '../../src/http/app';
import { connectTemporal } from '../../src/temporal/client';
import { getStack } from '../helpers/stack';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { openaiText } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';

/**
 * `?include=queue` on a live run: the backlog of its task queue from Temporal's task queue statistics (docs/runs.md).
 * An API on a task queue no worker polls, so its runs wait there.
 */
describe('runs: the task queue backlog of a live run (?include=queue)', function () {
  this.timeout(60_000);
  const queue = `unpolled-${crypto.randomBytes(4).toString('hex')}`;
  let server: { url: string; close(): Promise<void> };
  before(async () => {
    server = await startApi({ TEMPORAL_TASK_QUEUE: queue, QUEUE_STATS_CACHE_MS: '0' });
  });
  after(() => server?.close());

  it('shows the backlog estimate and when it was read, only when asked and only while the run is live', async () => {
    const { sessionId } = await signedIn('queue');
    const api = apiFor(sessionId, server.url);
    await createTask(api, 'default', 't');
    const url = await signedUrl(api, 'default', 't');
    for (const n of [1, 2, 3]) expect((await postSigned(url, { text: 'x' }, { 'run-id': `r${n}` })).status).to.equal(201);
    const path = (run: string) => `/api/runs/~/default/t/${run}`;

    const plain = await api.get(path('r1'));
    expect(plain.status, plain.text).to.equal(200);
    expect(plain.body).not.to.have.property('queue');

    // Three runs' first workflow tasks wait in a queue no worker polls (Temporal's figure is an estimate: it may lag).
    const shown = await until('the backlog to show the three runs', async () => {
      const res = await api.get(`${path('r1')}?include=queue`);
      expect(res.status, res.text).to.equal(200);
      return res.body.queue?.backlog_estimate >= 3 ? res.body : undefined;
    });
    expect(shown.status).to.equal('pending');
    expect(shown.queue).to.have.keys('backlog_estimate', 'as_of');
    expect(Date.parse(shown.queue.as_of)).to.be.closeTo(Date.now(), 60_000);
    // Variant A's path too.
    const a = await api.get(`/api/profiles/~/default/tasks/t/runs/r2?include=queue`);
    expect(a.status, a.text).to.equal(200);
    expect(a.body.queue.backlog_estimate).to.be.a('number');

    const bad = await api.get(`${path('r1')}?include=everything`);
    expect(bad.status).to.equal(400);
    expect(bad.body.error.message).to.match(/^query\.include/);

    // A worker on the queue at last: the runs end (and the reads' queries of their workflows are answered).
    getStack().fake.script(() => openaiText('done'));
    const worker = await getStack().startWorker({ TEMPORAL_TASK_QUEUE: queue });
    try {
      for (const run of ['r1', 'r2', 'r3']) expect((await waitForRun(api, `${server.url}${path(run)}`)).status).to.equal('ready');
    } finally {
      await worker.stop();
    }
  });

  it('answers a live run without it when Temporal stops answering (the read does not fail for it)', async () => {
    const stack = getStack();
    const { sessionId } = await signedIn('queue3');
    const api = apiFor(sessionId, server.url);
    await createTask(api, 'default', 't');
    expect((await postSigned(await signedUrl(api, 'default', 't'), { text: 'x' }, { 'run-id': 's1' })).status).to.equal(201);
    // A second API on the same queue whose Temporal is behind a proxy the test stalls (a server that hangs).
    const proxy = await startTcpProxy(stack.config.TEMPORAL_ADDRESS);
    const config = stack.configWith({ TEMPORAL_ADDRESS: proxy.address, TEMPORAL_TASK_QUEUE: queue, QUEUE_STATS_CACHE_MS: '0', DEPENDENCY_TIMEOUT_MS: '1000' });
    // Its connection is left open to the process's end: closing it while the SDK still retries the stalled calls
    // throws from the SDK's retry timer ("Channel has been shut down").
    const temporal = await connectTemporal(config);
    const app = http.createServer(createApp({ config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal }).callback()).listen(0, '127.0.0.1');
    await new Promise((r) => app.once('listening', r));
    const proxied = apiFor(sessionId, `http://127.0.0.1:${(app.address() as AddressInfo).port}`);
    const path = '/api/runs/~/default/t/s1?include=queue';
    try {
      const answered = await until('the backlog through the proxy', async () => {
        const res = await proxied.get(path);
        expect(res.status, res.text).to.equal(200);
        return res.body.queue ? res.body : undefined;
      });
      expect(answered.queue.backlog_estimate).to.be.at.least(1);
      proxy.stall();
      const res = await proxied.get(path);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status).to.equal('pending');
      expect(res.body).not.to.have.property('queue');
    } finally {
      app.closeAllConnections();
      app.close();
      await proxy.close();
    }
    // The run ends once a worker polls its queue.
    stack.fake.script(() => openaiText('done'));
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue });
    try {
      expect((await waitForRun(api, `${server.url}/api/runs/~/default/t/s1`)).status).to.equal('ready');
    } finally {
      await worker.stop();
    }
  });

  it('leaves a closed run without it', async () => {
    getStack().fake.script(() => openaiText('done'));
    const { api } = await signedIn('queue2');
    await createTask(api, 'default', 't');
    const res = await postSigned(await signedUrl(api, 'default', 't'), { text: 'x' }, { 'run-id': 'c1' });
    expect((await waitForRun(api, res.body.url)).status).to.equal('ready');
    const closed = await api.get(`${new URL(res.body.url).pathname}?include=queue`);
    expect(closed.status, closed.text).to.equal(200);
    expect(closed.body).not.to.have.property('queue');
  });
});
