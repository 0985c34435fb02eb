import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
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
