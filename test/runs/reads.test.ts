import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { openaiText, openaiToolCall, providerError } from '../helpers/fake-provider';
import { createRunReader } from '../../src/runs/live-reader';
import { runWorkflowId } from '../../src/temporal/ids';
import { OWNER, PROFILE, RUNNER, TASK } from '../../src/temporal/search-attributes';

describe('runs: reads', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('serves a closed run from its record with an ETag, and 304 when it has not changed', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'etag');
    const { body } = await postSigned(await signedUrl(api, 'default', 'etag'), { text: 'x' });
    const run = await waitForRun(api, body.url);
    const path = new URL(body.url).pathname;
    const first = await api.get(path);
    const etag = first.headers.get('etag');
    expect(etag).to.match(/^"[\w-]+"$/);
    expect(first.headers.get('server-timing'), 'time spent in the service').to.match(/^app;dur=\d+\.\d$/);
    expect(first.body).to.deep.equal(run);
    const again = await api.get(path, { headers: { 'if-none-match': etag! } });
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
    for (const header of [`W/${etag}`, `"other", ${etag}`, '*']) {
      expect((await api.get(path, { headers: { 'if-none-match': header } })).status, header).to.equal(304);
    }
    expect((await api.get(path, { headers: { 'if-none-match': '"other"' } })).status).to.equal(200);
  });

  it('answers a live run from the workflow query, with entries that the record does not have yet', async function () {
    this.timeout(30_000);
    const { api, username } = await signedIn();
    const { fake, db } = getStack();
    await installServlet(api, username, 'infinite-loop', 'loop');
    await createTask(api, 'default', 'live');
    // The model calls a tool that runs until the servlet's time limit: its call entry is pushed in the workflow and
    // written with the turn's end, so meanwhile only the query has it.
    fake.script([openaiToolCall([{ name: 'loop__spin', arguments: {} }]), { hang: true }]);
    const { body } = await postSigned(await signedUrl(api, 'default', 'live'), { text: 'x' }, { 'run-id': 'l1' });
    let live: any;
    let source: string | null = null;
    for (let i = 0; i < 100; i++) {
      const res = await api.get(new URL(body.url).pathname);
      live = res.body;
      source = res.headers.get('run-source');
      if (live.results.some((e: any) => e.msg === 'tool call: loop__spin')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(live.status).to.equal('running');
    expect(source).to.equal('live');
    expect(live.results.map((e: any) => e.msg)).to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt', 'tool call: loop__spin']);
    const record = await db.models.Run.findOne({ owner: username, name: 'l1' }).lean();
    expect(record!.status).to.equal('running');
    expect(record!.results.map((e: any) => e.msg), 'the record has the entries of its last write').to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt']);
    expect((await api.delete('/api/tasks/~/default/live')).status, 'deleting the task cancels its live run').to.equal(204);
  });

  it('shares one query between concurrent polls of a live run', async () => {
    const { api, username } = await signedIn();
    const { fake, temporal } = getStack();
    await createTask(api, 'default', 'shared');
    fake.script(() => ({ hang: true }));
    await postSigned(await signedUrl(api, 'default', 'shared'), { text: 'x' }, { 'run-id': 'sf' });
    const reader = createRunReader(temporal, { cacheMs: 1_000, waitMs: 10_000 });
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'shared', run: 'sf' });
    const stored = { count: 0, read: async () => [] };
    const answers = await Promise.all(Array.from({ length: 40 }, () => reader.read(id, stored)));
    const views = answers.map((a) => (a.kind === 'live' ? a.view : undefined));
    expect(views.every((v) => v !== undefined && v === views[0]), JSON.stringify(answers[0])).to.equal(true);
    expect(views[0]!.status).to.be.oneOf(['pending', 'running']);
    expect(reader.queryCount()).to.equal(1);
    await reader.read(id, stored);
    expect(reader.queryCount(), 'answered from the cache within its window').to.equal(1);
    expect((await api.delete('/api/tasks/~/default/shared')).status).to.equal(204);
  });

  it('lists a task\'s runs newest first, paged with a Link header, with names as long as names go', async () => {
    const { api } = await signedIn();
    // 64-character names make the cursor (the sort key of the last run, its _id among it) well over 200 characters.
    const long = (prefix: string) => prefix.padEnd(64, 'x');
    const task = long('many');
    const [r1, r2, r3] = ['r1', 'r2', 'r3'].map(long) as [string, string, string];
    await createTask(api, 'default', task);
    const url = await signedUrl(api, 'default', task);
    for (const name of [r1, r2, r3]) await waitForRun(api, (await postSigned(url, { text: name }, { 'run-id': name })).body.url);
    const first = await api.get(`/api/runs/~/default/${task}?limit=2`);
    expect(first.status).to.equal(200);
    expect(first.body.map((r: any) => r.name)).to.deep.equal([r3, r2]);
    expect(first.body[0]).to.have.keys('name', 'status', 'results', 'created_at', 'modified_at', 'usage');
    const link = first.headers.get('link');
    expect(link).to.match(/^<(.+)>; rel="next"$/);
    const next = await api.get(/^<(.+)>/.exec(link!)![1]!.replace(/^https?:\/\/[^/]+/, ''));
    expect(next.status, next.text).to.equal(200);
    expect(next.body.map((r: any) => r.name)).to.deep.equal([r1]);
    expect(next.headers.get('link')).to.equal(null);
    const variantA = await api.get(`/api/profiles/~/default/tasks/${task}/runs`);
    expect(variantA.body.map((r: any) => r.name)).to.deep.equal([r3, r2, r1]);
    expect((await api.get(`/api/runs/~/default/${task}?limit=0`)).status).to.equal(400);
    expect((await api.get(`/api/runs/~/default/${task}?cursor=bogus`)).status).to.equal(400);
  });

  it('lists only the runs in the statuses asked for, paged with the filter kept, and names `status` when it is bad', async () => {
    const { api } = await signedIn();
    const { fake } = getStack();
    await createTask(api, 'default', 'sorted');
    const url = await signedUrl(api, 'default', 'sorted');
    fake.script([openaiText('one'), providerError('openai', 400, 'no such model'), openaiText('three'), { hang: true }]);
    for (const name of ['s1', 's2', 's3']) await waitForRun(api, (await postSigned(url, { text: name }, { 'run-id': name })).body.url);
    expect((await postSigned(url, { text: 's4' }, { 'run-id': 's4' })).status).to.equal(201);
    const names = async (query: string) => {
      const res = await api.get(`/api/runs/~/default/sorted${query}`);
      expect(res.status, res.text).to.equal(200);
      return res.body.map((r: any) => r.name);
    };
    expect(await names(''), 'no filter: every run').to.deep.equal(['s4', 's3', 's2', 's1']);
    expect(await names('?status=ready')).to.deep.equal(['s3', 's1']);
    expect(await names('?status=error')).to.deep.equal(['s2']);
    expect(await names('?status=ready,error')).to.deep.equal(['s3', 's2', 's1']);
    expect(await names('?status=pending,running')).to.deep.equal(['s4']);
    expect((await api.get('/api/profiles/~/default/tasks/sorted/runs?status=error')).body.map((r: any) => r.name), 'Variant A').to.deep.equal(['s2']);

    const first = await api.get('/api/runs/~/default/sorted?status=ready&limit=1');
    expect(first.body.map((r: any) => r.name)).to.deep.equal(['s3']);
    const next = await api.get(/^<(.+)>/.exec(first.headers.get('link')!)![1]!);
    expect(next.body.map((r: any) => r.name), 'the next page keeps the filter').to.deep.equal(['s1']);
    expect(next.headers.get('link')).to.equal(null);

    for (const bad of ['done', 'ready,', 'ready,,error', 'READY', '', 'ready&status=error']) {
      const res = await api.get(`/api/runs/~/default/sorted?status=${bad}`);
      expect(res.status, bad).to.equal(400);
      expect(res.body.error.code, bad).to.equal('invalid_request');
      expect(res.body.error.message, bad).to.match(/^query\.status: /);
    }
    expect((await api.delete('/api/tasks/~/default/sorted')).status, 'deleting the task cancels its live run').to.equal(204);
  });

  it('makes runs searchable in Temporal by owner, profile, task and runner, with the task in the memo', async () => {
    const { api, username } = await signedIn();
    const { temporal } = getStack();
    await createTask(api, 'default', 'indexed', { runner: 'anthropic' });
    await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'indexed'), { text: 'x' }, { 'run-id': 'i1' })).body.url);
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'indexed', run: 'i1' });
    expect(id).to.equal(`run/${username}/default/indexed/i1`);
    const d = await temporal.workflow.getHandle(id).describe();
    expect(d.typedSearchAttributes.get(OWNER)).to.equal(username);
    expect(d.typedSearchAttributes.get(PROFILE)).to.equal('default');
    expect(d.typedSearchAttributes.get(TASK)).to.equal('indexed');
    expect(d.typedSearchAttributes.get(RUNNER)).to.equal('anthropic');
    expect(await d.memo).to.deep.include({ task: `${username}/default/indexed`, taskVersion: 1 });
    let found = 0;
    for (let i = 0; i < 50 && found === 0; i++) {
      for await (const w of temporal.workflow.list({ query: `Owner = "${username}" AND Task = "indexed"` })) if (w.workflowId === id) found++;
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    expect(found).to.equal(1);
  });
});
