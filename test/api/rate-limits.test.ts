import { expect } from 'chai';
import { api as apiAt, signedIn, startApi, type ApiResponse } from '../helpers/api';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { getStack } from '../helpers/stack';
import { deleteStaleMarks, placeId, releaseLiveRun } from '../../src/store/live-runs';
import { liveRunLifetimeMs } from '../../src/runs/trigger';

const LIMIT = 4;

function expectLimited(res: { status: number; headers: Headers; body: any; text: string }, code: string) {
  expect(res.status, res.text).to.equal(429);
  expect(res.body.error.code).to.equal(code);
  expect(res.body.error.message).to.match({ trigger_limit: /^TRIGGER_LIMIT_PER_MINUTE: /, write_limit: /^WRITE_LIMIT_PER_MINUTE: /, live_runs_limit: /^LIVE_RUNS_PER_USER: / }[code]!);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).to.be.within(1, 60);
}

/** The same signed URL, sent to another API process. */
const via = (url: string, base: string) => `${base}${new URL(url).pathname}${new URL(url).search}`;

describe('rate limits', () => {
  let limited: { url: string };
  let other: { url: string };
  before(async () => {
    const overrides = { TRIGGER_LIMIT_PER_MINUTE: String(LIMIT), WRITE_LIMIT_PER_MINUTE: String(LIMIT) };
    limited = await startApi(overrides);
    other = await startApi(overrides);
  });

  it('refuses a signed URL past TRIGGER_LIMIT_PER_MINUTE with 429 and Retry-After, starting nothing; a retry of a run that exists still answers 200', async () => {
    const me = await signedIn('limit');
    await createTask(me.api, 'default', 't', { prompt: 'hi' });
    const url = via(await signedUrl(me.api, 'default', 't'), limited.url);
    for (let i = 0; i < LIMIT; i++) expect((await postSigned(url, {}, { 'run-id': `r${i}` })).status).to.equal(201);
    // Retries of runs that exist do not count, and are not refused.
    for (let i = 0; i < 3; i++) expect((await postSigned(url, {}, { 'run-id': 'r0' })).status).to.equal(200);
    const refused = await postSigned(url, {}, { 'run-id': 'over' });
    expectLimited(refused, 'trigger_limit');
    expect((await me.api.get('/api/runs/~/default/t/over')).status).to.equal(404);
    expect(await getStack().db.models.Run.findById(`run/${me.username}/default/t/over`).lean()).to.equal(null);
    expect((await postSigned(url, {}, { 'run-id': 'r1' })).status).to.equal(200);
  });

  it('counts per task, so every signed URL of it together, across API processes (the counts live in MongoDB)', async () => {
    const me = await signedIn('limit');
    await createTask(me.api, 'default', 't', { prompt: 'hi' });
    const first = await signedUrl(me.api, 'default', 't');
    const second = await signedUrl(me.api, 'default', 't');
    const sent: number[] = [];
    for (let i = 0; i < LIMIT; i++) sent.push((await postSigned(via(i % 2 ? first : second, i % 2 ? limited.url : other.url), {}, { 'run-id': `r${i}` })).status);
    expect(sent).to.deep.equal(Array(LIMIT).fill(201));
    expectLimited(await postSigned(via(first, other.url), {}, { 'run-id': 'over' }), 'trigger_limit');
    expectLimited(await postSigned(via(second, limited.url), {}, { 'run-id': 'over' }), 'trigger_limit');
  });

  it('limits Variant A triggers per task, and does not count them as writes', async () => {
    const me = await signedIn('limit');
    const api = apiAt(me.sessionId, limited.url);
    expect((await api.put('/api/profiles/~/default/tasks/a', { provider: 'openai', prompt: 'hi', settings: { key: 'k' } })).status).to.equal(201);
    for (let i = 0; i < LIMIT; i++) expect((await api.put(`/api/profiles/~/default/tasks/a/runs/r${i}`, {})).status).to.equal(201);
    expectLimited(await api.put('/api/profiles/~/default/tasks/a/runs/over', {}), 'trigger_limit');
    // One write so far (the task): LIMIT - 1 more go through.
    for (let i = 1; i < LIMIT; i++) expect((await api.post(`/api/profiles/~/p${i}`, {})).status).to.equal(201);
  });

  it('refuses writes past WRITE_LIMIT_PER_MINUTE per session with 429, changing nothing; reads and other sessions go on', async () => {
    const me = await signedIn('limit');
    const api = apiAt(me.sessionId, limited.url);
    for (let i = 0; i < LIMIT; i++) expect((await api.post(`/api/profiles/~/p${i}`, {})).status).to.equal(201);
    const refused: ApiResponse = await api.post('/api/profiles/~/over', {});
    expectLimited(refused, 'write_limit');
    expect((await me.api.get('/api/profiles/~/over')).status).to.equal(404);
    expect((await api.get('/api/profiles/~/p0')).status).to.equal(200);
    const again = await signedIn('limit');
    expect((await apiAt(again.sessionId, other.url).post('/api/profiles/~/p0', {})).status).to.equal(201);
    // The limit is per session, shared by the API processes.
    expectLimited(await apiAt(me.sessionId, other.url).post('/api/profiles/~/over', {}), 'write_limit');
  });

  describe('LIVE_RUNS_PER_USER', () => {
    after(() => getStack().fake.reset());

    it('refuses a trigger past the limit with 429 live_runs_limit and starts nothing; places free as runs end or their task is deleted', async () => {
      const { fake, db, temporal } = getStack();
      const liveLimited = await startApi({ LIVE_RUNS_PER_USER: '2' });
      const me = await signedIn('live');
      const api = apiAt(me.sessionId, liveLimited.url);
      fake.script((req) => (lastUserText(req).includes('hold') ? { hang: true } : openaiText('done')));
      await createTask(api, 'default', 't', { prompt: '{{ text }}' });
      const url = via(await signedUrl(api, 'default', 't'), liveLimited.url);
      expect((await postSigned(url, { text: 'hold' }, { 'run-id': 'h1' })).status).to.equal(201);
      expect((await postSigned(url, { text: 'hold' }, { 'run-id': 'h2' })).status).to.equal(201);
      const refused = await postSigned(url, { text: 'hold' }, { 'run-id': 'h3' });
      expect(refused.status, refused.text).to.equal(429);
      expect(refused.body.error.code).to.equal('live_runs_limit');
      expect(refused.body.error.message).to.match(/^LIVE_RUNS_PER_USER: 2 runs/);
      expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
      expect(await db.models.Run.findById(`run/${me.username}/default/t/h3`).lean()).to.equal(null);
      // A retry of a run that exists is answered as always.
      expect((await postSigned(url, { text: 'hold' }, { 'run-id': 'h1' })).status).to.equal(200);

      expect((await api.post('/api/runs/~/default/t/h1/cancel')).status).to.equal(202);
      expect((await waitForRun(api, `${liveLimited.url}/api/runs/~/default/t/h1`)).status).to.equal('error');
      // The close gives the place back (in the worker, as the run's end is recorded).
      await until('a place freed by the cancelled run', async () => (await postSigned(url, { text: 'hold' }, { 'run-id': 'h3' })).status === 201);
      expectLimited(await postSigned(url, { text: 'hold' }, { 'run-id': 'h4' }), 'live_runs_limit');

      // An operator's termination in Temporal: the run's read ends it, and its place is given back.
      await temporal.workflow.getHandle(`run/${me.username}/default/t/h2`).terminate('by the test');
      expect((await waitForRun(api, `${liveLimited.url}/api/runs/~/default/t/h2`)).status).to.equal('error');
      await until('a place freed by the terminated run', async () => (await postSigned(url, { text: 'hold' }, { 'run-id': 'h4' })).status === 201);

      // Deleting the task gives back the places of its live runs.
      expect((await api.request('DELETE', '/api/tasks/~/default/t')).status).to.equal(204);
      expect(await db.models.LiveRun.countDocuments({ owner: me.username })).to.equal(0);
    });

    it('lets no more than the limit through when triggers come at once', async () => {
      const { fake, db } = getStack();
      const liveLimited = await startApi({ LIVE_RUNS_PER_USER: '2' });
      const me = await signedIn('live');
      const api = apiAt(me.sessionId, liveLimited.url);
      fake.script(() => ({ hang: true }));
      await createTask(api, 'default', 't', { prompt: 'hold' });
      const url = via(await signedUrl(api, 'default', 't'), liveLimited.url);
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => postSigned(url, {}, { 'run-id': `b${i}` })));
      const statuses = answers.map((a) => a.status);
      expect(statuses.every((s) => s === 201 || s === 429), statuses.join()).to.equal(true);
      // Places are slots of unique ids: exactly the limit's worth are taken, never more, and none left unused.
      const accepted = statuses.filter((s) => s === 201).length;
      expect(accepted).to.equal(2);
      expect(await db.models.LiveRun.countDocuments({ owner: me.username })).to.equal(accepted);
      expect(await db.models.Run.countDocuments({ owner: me.username })).to.equal(accepted);
      expect((await api.request('DELETE', '/api/tasks/~/default/t')).status).to.equal(204);
    });

    it('gives a place back only to the run holding it, however often a close is seen', async () => {
      const { db } = getStack();
      const owner = `release-${Date.now()}`;
      const id = placeId(owner, 0);
      await db.models.LiveRun.collection.insertOne({ _id: id as never, owner, run: 'run/y', at: new Date() });
      // run/x's place was given back before, and run/y took the slot since: run/x's close seen again leaves it.
      await releaseLiveRun(db.models, { runId: 'run/x', owner, slot: 0 });
      expect(await db.models.LiveRun.collection.findOne({ _id: id as never })).to.deep.include({ owner, run: 'run/y' });
      await releaseLiveRun(db.models, { runId: 'run/y', owner, slot: 0 });
      expect(await db.models.LiveRun.collection.findOne({ _id: id as never })).to.equal(null);
    });

    it('does not count a place older than any run can live (a process stopped between taking it and recording the run), and takes it over', async () => {
      const { db, fake } = getStack();
      fake.reset();
      // This API's runs live at most a minute, so its places go stale sooner than the shared worker's (half an hour):
      // places 10 minutes old are stale here, and the reconciler's sweep (the worker's) leaves them to this test.
      const apiConfig = { RUN_TIMEOUT_MS: 60_000, RECONCILE_INTERVAL_MS: getStack().config.RECONCILE_INTERVAL_MS };
      const liveLimited = await startApi({ LIVE_RUNS_PER_USER: '2', RUN_TIMEOUT_MS: String(apiConfig.RUN_TIMEOUT_MS) });
      const me = await signedIn('live');
      const api = apiAt(me.sessionId, liveLimited.url);
      await createTask(api, 'default', 't', { prompt: 'hi' });
      const long = new Date(Date.now() - 10 * 60_000);
      expect(long.getTime(), 'stale for this API only').to.be.below(Date.now() - liveRunLifetimeMs(apiConfig)).and.above(Date.now() - liveRunLifetimeMs(getStack().config));
      // Every slot taken long ago.
      await db.models.LiveRun.collection.insertMany([0, 1].map((slot) => ({ _id: placeId(me.username, slot) as never, owner: me.username, run: `run/${me.username}/default/t/lost${slot}`, at: long })));
      const res = await postSigned(via(await signedUrl(api, 'default', 't'), liveLimited.url), {}, { 'run-id': 'r1' });
      expect(res.status, res.text).to.equal(201);
      const record = await db.models.Run.findById(`run/${me.username}/default/t/r1`).lean();
      expect(record?.live_slot, 'the run took over a stale slot').to.be.oneOf([0, 1]);
      await waitForRun(api, `${liveLimited.url}/api/runs/~/default/t/r1`);
      // The other stale place is still there (the reconciler deletes it); the run's is gone with its close.
      await until('the run\'s place given back', async () => (await db.models.LiveRun.countDocuments({ owner: me.username })) === 1);
      expect((await db.models.LiveRun.findOne({ owner: me.username }).lean())?.run).to.equal(`run/${me.username}/default/t/lost${1 - record!.live_slot!}`);
      // The sweep, as this API's reconciler would make it.
      expect(await deleteStaleMarks(db.models, liveRunLifetimeMs(apiConfig))).to.equal(1);
      expect(await db.models.LiveRun.countDocuments({ owner: me.username })).to.equal(0);
    });
  });

  it('keeps no session id in the store: counts are keyed by its hash', async () => {
    const me = await signedIn('limit');
    await apiAt(me.sessionId, limited.url).post('/api/profiles/~/p', {});
    const docs = await getStack().db.conn.db!.collection('rate_limits').find({}).toArray();
    expect(docs.length).to.be.greaterThan(0);
    expect(JSON.stringify(docs)).not.to.contain(me.sessionId.split('/').pop());
  });
});
