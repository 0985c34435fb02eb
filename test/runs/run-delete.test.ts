import crypto from 'node:crypto';
import { expect } from 'chai';
import { ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { deleteRunContent, storeText, writePages } from '../../src/store/run-content';
import { findRun, insertRun, runWorkflowId } from '../../src/store/runs';
import { findTask } from '../../src/store/tasks';
import { closeFromWorkflow } from '../../src/runs/endings';
import { startFromRecord } from '../../src/runs/trigger';
import { ensureRetentionSchedule } from '../../src/temporal/retention-schedule';
import { retentionScheduleId } from '../../src/temporal/ids';
import { createRetentionActivities } from '../../activities/retention';
import { createRuns } from '../../src/runs';
import { deleteClosedRuns } from '../../src/runs/delete';

/** What the raw collections hold of a run: its record, its pages, its stored texts. */
async function stored(runId: string) {
  const db = getStack().db.conn.db!;
  return {
    runs: await db.collection<{ _id: string }>('runs').countDocuments({ _id: runId }),
    pages: await db.collection('run_pages').countDocuments({ run: runId }),
    blobs: await db.collection('run_blobs').countDocuments({ run: runId }),
  };
}

/** Whether Temporal still has an execution under the run's workflow id. */
const hasExecution = (runId: string) =>
  getStack().temporal.workflow.getHandle(runId).describe().then(
    () => true,
    (err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    },
  );

const DAY_MS = 24 * 3600_000;
const age = (runId: string, days: number) => getStack().db.models.Run.updateOne({ _id: runId }, { $set: { modified_at: new Date(Date.now() - days * DAY_MS) } });

/** A closed Variant B run `run` of task `task` (created on first use), answered by the fake's echo. */
async function closedRun(api: Api, username: string, task: string, run: string, text = 'x') {
  await createTask(api, 'default', task);
  const trigger = await postSigned(await signedUrl(api, 'default', task), { text }, { 'run-id': run });
  expect(trigger.status, trigger.text).to.equal(201);
  const body = await waitForRun(api, trigger.body.url);
  return { id: runWorkflowId({ owner: username, profile: 'default', task, run }), url: trigger.body.url as string, body };
}

describe('runs: delete and retention', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('leaves a later run of the name alone when deleting by a stale copy of an earlier one (retention racing a re-trigger)', async () => {
    const { api, username } = await signedIn('del');
    const { db, temporal, logger, config } = getStack();
    const { id } = await closedRun(api, username, 'stale', 's1', 'b'.repeat(70_000));
    const before = await stored(id);
    expect(before.blobs, 'stored texts').to.be.above(0);
    // A copy read before the name was deleted and used again: same _id, an earlier creation time.
    const deleted = await deleteClosedRuns({ models: db.models, temporal, logger, config }, [{ _id: id, created_at: new Date(Date.now() - DAY_MS) }]);
    expect(deleted).to.deep.equal([]);
    expect(await stored(id)).to.deep.equal(before);
    expect(await hasExecution(id)).to.equal(true);
  });

  it('deletes a closed Variant A run with all it stored, and a trigger with its name then runs anew', async () => {
    const { api, username } = await signedIn('del');
    const { config, db, fake, temporal } = getStack();
    const put = await api.put('/api/profiles/~/default/tasks/big', { runner: 'openai', openai: { prompt: 'Say {{ text }}', model: config.VARIANT_A_MODEL }, settings: { key: 'sk-test-key-0123456789abcdef' } });
    expect(put.status, put.text).to.equal(201);
    const path = '/api/profiles/~/default/tasks/big/runs/r1';
    // Over RUN_INLINE_BYTES: the prompt and the answer are stored in run_blobs.
    const first = await api.put(path, { parameters: { text: 'a'.repeat(70_000) } });
    expect(first.status, first.text).to.equal(201);
    expect((await waitForRun(api, first.body.url)).status).to.equal('ready');
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'big', run: 'r1' });
    // A second page of entries, as a run of more than 32 entries has.
    await writePages(db.models, id, 'e', 40, [{ msg: 'late entry', time: 0, level: 30 }]);
    const before = await stored(id);
    expect(before.runs).to.equal(1);
    expect(before.pages).to.equal(1);
    expect(before.blobs).to.be.at.least(2);
    expect((await api.get(path)).status, 'read (and cached) before the delete').to.equal(200);
    const earlier = (await temporal.workflow.getHandle(id).describe()).runId;

    const del = await api.delete(path);
    expect(del.status, del.text).to.equal(204);
    expect(del.text).to.equal('');
    expect(await stored(id)).to.deep.equal({ runs: 0, pages: 0, blobs: 0 });
    const read = await api.get(path);
    expect(read.status).to.equal(404);
    expect(read.body.error.code).to.equal('not_found');
    expect((await api.get('/api/profiles/~/default/tasks/big/runs')).body).to.deep.equal([]);

    // Temporal deletes the earlier execution in the background (seconds later): the new run starts either way.
    const again = await api.put(path, { parameters: { text: 'two' } });
    expect(again.status, again.text).to.equal(201);
    const run = await waitForRun(api, again.body.url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say two');
    expect(fake.requests).to.have.length(2);
    expect((await temporal.workflow.getHandle(id).describe()).runId).to.not.equal(earlier);
  });

  it('deletes a closed Variant B run, and its name runs anew through the signed URL', async () => {
    const { api, username } = await signedIn('del');
    const { id, url } = await closedRun(api, username, 'b', 'r1', 'one');
    const path = new URL(url).pathname;
    expect(path).to.equal(`/api/runs/${username}/default/b/r1`);
    const del = await api.delete('/api/runs/~/default/b/r1');
    expect(del.status, del.text).to.equal(204);
    expect(await stored(id)).to.deep.equal({ runs: 0, pages: 0, blobs: 0 });
    expect((await api.get(path)).status).to.equal(404);

    const again = await postSigned(await signedUrl(api, 'default', 'b'), { text: 'two' }, { 'run-id': 'r1' });
    expect(again.status, again.text).to.equal(201);
    const run = await waitForRun(api, again.body.url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say two');
  });

  it('refuses to delete a live run with 409 run_live, and deletes it once it has closed', async () => {
    const { api, username } = await signedIn('del');
    const { fake } = getStack();
    await createTask(api, 'default', 'slow');
    fake.script(() => ({ hang: true }));
    const trigger = await postSigned(await signedUrl(api, 'default', 'slow'), { text: 'x' }, { 'run-id': 'live' });
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'slow', run: 'live' });
    await until('the run to call the provider', async () => fake.requests.length > 0);
    for (const path of ['/api/runs/~/default/slow/live', '/api/profiles/~/default/tasks/slow/runs/live']) {
      const del = await api.delete(path);
      expect(del.status, del.text).to.equal(409);
      expect(del.body.error.code).to.equal('run_live');
    }
    expect((await stored(id)).runs).to.equal(1);
    expect(await hasExecution(id)).to.equal(true);
    fake.reset(); // the hanging call fails, and its retry gets the echo
    expect((await waitForRun(api, trigger.body.url)).status).to.equal('ready');
    expect((await api.delete('/api/runs/~/default/slow/live')).status).to.equal(204);
  });

  it('answers 404 for an unknown run or another user\'s, and 400 naming path.run for a bad name', async () => {
    const owner = await signedIn('del');
    const intruder = await signedIn('del');
    const { id } = await closedRun(owner.api, owner.username, 'mine', 'r1');
    for (const path of ['/api/runs/~/default/mine/nope', '/api/profiles/~/default/tasks/mine/runs/nope']) {
      const res = await owner.api.delete(path);
      expect(res.status, path).to.equal(404);
      expect(res.body.error.code).to.equal('not_found');
    }
    for (const path of [`/api/runs/${owner.username}/default/mine/r1`, `/api/profiles/${owner.username}/default/tasks/mine/runs/r1`]) {
      expect((await intruder.api.delete(path)).status, path).to.equal(404);
    }
    expect((await stored(id)).runs).to.equal(1);
    for (const path of ['/api/runs/~/default/mine/bad%20name', `/api/profiles/~/default/tasks/mine/runs/${'r'.repeat(65)}`]) {
      const res = await owner.api.delete(path);
      expect(res.status, path).to.equal(400);
      expect(res.body.error.message).to.match(/^path\.run: /);
    }
  });

  it('starts a reused name although Temporal still holds the earlier run\'s execution (its deletion failed)', async () => {
    const { api, username, sessionId } = await signedIn('del');
    const { db, temporal } = getStack();
    const { id } = await closedRun(api, username, 'kept', 'r1', 'one');
    const earlier = (await temporal.workflow.getHandle(id).describe()).runId;
    // What a delete leaves when Temporal does not answer: the record and contents gone, the execution kept.
    await db.conn.db!.collection<{ _id: string }>('runs').deleteOne({ _id: id });
    await deleteRunContent(db.models, [id]);
    const again = await postSigned(await signedUrl(api, 'default', 'kept'), { text: 'two' }, { 'run-id': 'r1' });
    expect(again.status, again.text).to.equal(201);
    // Read through another API process: this one was not told of the deletion (its copy lasts RUN_RECORD_CACHE_MS).
    const other = await startApi({});
    const run = await waitForRun(apiFor(sessionId, other.url), again.body.url).finally(() => other.close());
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say two');
    expect((await temporal.workflow.getHandle(id).describe()).runId).to.not.equal(earlier);
  });

  it('never starts a closed run again, even from a copy of its record read while it was pending', async () => {
    const { api, username } = await signedIn('del');
    const { db, temporal, config, fake } = getStack();
    const { id } = await closedRun(api, username, 'once', 'r1');
    const execution = (await temporal.workflow.getHandle(id).describe()).runId;
    const record = (await findRun(db.models, id))!;
    const task = (await findTask(db.models, { owner: username, profile: 'default', name: 'once' }))!;
    await startFromRecord({ models: db.models, temporal, config }, { ...record, status: 'pending', started: false }, task);
    expect((await temporal.workflow.getHandle(id).describe()).runId).to.equal(execution);
    expect(fake.requests).to.have.length(1);
  });

  it('does not end a later run of a name with the earlier run\'s terminated workflow', async () => {
    const { api, username } = await signedIn('del');
    const { db, temporal, logger, fake } = getStack();
    await createTask(api, 'default', 'reused');
    fake.script(() => ({ hang: true }));
    const trigger = await postSigned(await signedUrl(api, 'default', 'reused'), { text: 'x' }, { 'run-id': 'r1' });
    const identity = { owner: username, profile: 'default', task: 'reused', run: 'r1' };
    const id = runWorkflowId(identity);
    await until('the run to call the provider', async () => fake.requests.length > 0);
    await temporal.workflow.getHandle(id).terminate('stopped');
    expect((await waitForRun(api, trigger.body.url)).status).to.equal('error');
    // The name deleted and triggered again, its new record not started yet, the terminated execution still there.
    await db.conn.db!.collection<{ _id: string }>('runs').deleteOne({ _id: id });
    const taskDoc = (await findTask(db.models, { owner: username, profile: 'default', name: 'reused' }))!;
    await insertRun(db.models, { identity, taskId: taskDoc._id, taskVersion: taskDoc.version, runner: 'openai', payload: {}, at: new Date() });
    try {
      const listed = await temporal.workflow.getHandle(id).describe();
      const deps = { models: db.models, temporal, logger, config: getStack().config };
      expect(await closeFromWorkflow(deps, id, 'TERMINATED', listed), 'as the reconciler sees it').to.equal(false);
      expect(await closeFromWorkflow(deps, id, 'TERMINATED'), 'as a read sees it').to.equal(false);
      const read = await api.get(new URL(trigger.body.url).pathname);
      expect(read.body.status).to.equal('pending');
      expect((await findRun(db.models, id))!.status).to.equal('pending');
    } finally {
      await db.conn.db!.collection<{ _id: string }>('runs').deleteOne({ _id: id });
    }
  });

  it('keeps the retention schedule exactly while RUN_RETENTION_DAYS is set', async () => {
    const { temporal, configWith } = getStack();
    const queue = `retain-${crypto.randomBytes(4).toString('hex')}`;
    const handle = temporal.schedule.getHandle(retentionScheduleId(queue));
    const absent = () => handle.describe().then(() => false, (err: unknown) => err instanceof ScheduleNotFoundError);
    await ensureRetentionSchedule(temporal, configWith({ TEMPORAL_TASK_QUEUE: queue }));
    expect(await absent(), 'unset: none').to.equal(true);
    await ensureRetentionSchedule(temporal, configWith({ TEMPORAL_TASK_QUEUE: queue, RUN_RETENTION_DAYS: '0.5' }));
    let described = await handle.describe();
    expect(described.action.args).to.deep.equal([{ retentionMs: 12 * 3600_000 }]);
    expect(described.spec.intervals?.[0]?.every).to.equal(3_600_000);
    expect(described.policies.catchupWindow).to.equal(3_600_000);
    await ensureRetentionSchedule(temporal, configWith({ TEMPORAL_TASK_QUEUE: queue, RUN_RETENTION_DAYS: '30', RETENTION_INTERVAL_MS: '60000' }));
    described = await handle.describe();
    expect(described.action.args).to.deep.equal([{ retentionMs: 30 * DAY_MS }]);
    expect(described.spec.intervals?.[0]?.every).to.equal(60_000);
    // An existing Schedule takes the new interval's policies and time-out too, not only its spec.
    expect(described.policies.catchupWindow).to.equal(60_000);
    expect(described.action.type === 'startWorkflow' && described.action.workflowExecutionTimeout).to.equal(120_000);
    await ensureRetentionSchedule(temporal, configWith({ TEMPORAL_TASK_QUEUE: queue }));
    expect(await absent(), 'unset again: deleted').to.equal(true);
  });

  it('deletes closed runs past the retention in batches, through its schedule, and keeps recent and live ones', async function () {
    this.timeout(90_000);
    const { api, username } = await signedIn('retain');
    const stack = getStack();
    const { db, temporal, logger, fake } = stack;
    const old1 = await closedRun(api, username, 'ret', 'old1');
    const old2 = await closedRun(api, username, 'ret', 'old2');
    const recent = await closedRun(api, username, 'ret', 'recent');
    await storeText(db.models, old1.id, 'big', 'x'.repeat(2048), 1024);
    await writePages(db.models, old1.id, 'e', 40, [{ msg: 'late entry', time: 0, level: 30 }]);
    fake.script(() => ({ hang: true }));
    const liveTrigger = await postSigned(await signedUrl(api, 'default', 'ret'), { text: 'x' }, { 'run-id': 'live' });
    const live = runWorkflowId({ owner: username, profile: 'default', task: 'ret', run: 'live' });
    await until('the live run to call the provider', async () => (await findRun(db.models, live))?.status === 'running');
    for (const id of [old1.id, old2.id, live]) await age(id, 400);
    await age(recent.id, 300);

    // One batch of one: one of the two expired runs goes, and the activity says more may be left.
    const activities = createRetentionActivities({ db, logger }, createRuns({ models: db.models, temporal, logger, config: getStack().config }));
    expect(await activities.deleteExpiredRuns({ before: Date.now() - 365 * DAY_MS, limit: 1 })).to.deep.equal({ deleted: 1, more: true });
    const left = (await stored(old1.id)).runs + (await stored(old2.id)).runs;
    expect(left).to.equal(1);

    const queue = `retain-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, RUN_RETENTION_DAYS: '365' });
    const schedule = temporal.schedule.getHandle(retentionScheduleId(queue));
    try {
      await schedule.trigger();
      const action = await until('the schedule to start a pass', async () => (await schedule.describe()).info.recentActions[0]);
      const result = await temporal.workflow.getHandle(action.action.workflow.workflowId).result();
      expect(result.deleted).to.be.at.least(1);
      for (const id of [old1.id, old2.id]) expect(await stored(id), id).to.deep.equal({ runs: 0, pages: 0, blobs: 0 });
      expect((await api.get(new URL(old1.url).pathname)).status).to.equal(404);
      expect((await api.get(new URL(recent.url).pathname)).body.status, 'recent: kept').to.equal('ready');
      expect((await findRun(db.models, live))?.status, 'live: kept').to.equal('running');
      // Temporal accepted the deletion of their executions (it deletes them in the background, 20 s to minutes
      // later on the dev server: too long to wait for here).
      const refused = stack.logs.lines.filter((l) => l.includes('Temporal did not delete') && (l.includes(old1.id) || l.includes(old2.id)));
      expect(refused).to.deep.equal([]);
      expect(await hasExecution(recent.id)).to.equal(true);
    } finally {
      await schedule.delete().catch(() => undefined);
      await worker.stop();
    }
    fake.reset();
    expect((await waitForRun(api, liveTrigger.body.url)).status).to.equal('ready');
  });
});
