import crypto from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { createTask, until } from '../helpers/runs';
import { openaiText } from '../helpers/fake-provider';
import { deferStart, findRun, insertRun, runWorkflowId } from '../../src/store/runs';
import { findTask, type TaskRecord } from '../../src/store/tasks';

/** A run recorded by a trigger whose workflow start failed (Temporal did not answer), deferred at `at`. */
async function deferredRun(username: string, task: Pick<TaskRecord, '_id' | 'version'>, run: string, queue: string, at: Date): Promise<string> {
  const { db } = getStack();
  const identity = { owner: username, profile: 'default', task: 'deferred', run };
  await insertRun(db.models, { identity, taskId: task._id, taskVersion: task.version, runner: 'openai', payload: { text: run }, at: new Date() });
  await deferStart(db.models, runWorkflowId(identity), queue, at);
  return runWorkflowId(identity);
}

const deferral = (id: string) => getStack().db.models.DeferredStart.findById(id).lean();
/** The reconciler forgets a deferral just after it has dealt with the run. */
const forgotten = (id: string) => until(`the deferral of ${id} forgotten`, async () => (await deferral(id)) === null);
const notStarted = async (id: string) => {
  const described = await getStack().temporal.workflow.getHandle(id).describe().catch((err: unknown) => err);
  expect(described, 'no workflow of the run').to.be.instanceOf(WorkflowNotFoundError);
};

describe('runs: the reconciler\'s deferred starts', () => {
  let queue: string;
  let stopWorker: () => Promise<void>;
  let apiUrl: string;
  let closeApi: () => Promise<void>;

  beforeEach(async () => {
    // A worker of its own queue whose reconciler passes every second (it takes the deferrals of its queue only).
    queue = `deferred-${crypto.randomBytes(4).toString('hex')}`;
    stopWorker = (await getStack().startWorker({ TEMPORAL_TASK_QUEUE: queue, RECONCILE_INTERVAL_MS: '1000' })).stop;
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    apiUrl = server.url;
    closeApi = server.close;
    getStack().fake.reset();
  });
  afterEach(async () => {
    getStack().fake.reset();
    await closeApi();
    await stopWorker();
  });

  it('ends, without starting it, a deferred run whose task was deleted and made again under the same name', async function () {
    this.timeout(60_000);
    const { username, sessionId } = await signedIn();
    const { db } = getStack();
    const api = apiFor(sessionId, apiUrl);
    await createTask(api, 'default', 'deferred');
    const deleted = (await findTask(db.models, { owner: username, profile: 'default', name: 'deferred' }))!;
    expect((await api.delete('/api/tasks/~/default/deferred')).status).to.equal(204);
    // A trigger that read the task before its deletion recorded its run after it; its start failed.
    const id = await deferredRun(username, deleted, 'd1', queue, new Date());
    await createTask(api, 'default', 'deferred');

    const record = await until('the run closed by the reconciler', async () => {
      const found = await findRun(db.models, id);
      return found?.status === 'error' && found;
    });
    expect(record.results.at(-1)).to.deep.include({ error: 'the task was deleted before the run could start' });
    await forgotten(id);
    await notStarted(id);
    const read = await api.get('/api/runs/~/default/deferred/d1');
    expect(read.body).to.deep.include({ status: 'error' });
  });

  it('ends a deferred run whose start keeps failing for its own reason, while the others start', async function () {
    this.timeout(60_000);
    const { username, sessionId } = await signedIn();
    const { db, config, fake, logs } = getStack();
    const api = apiFor(sessionId, apiUrl);
    await createTask(api, 'default', 'deferred');
    const task = (await findTask(db.models, { owner: username, profile: 'default', name: 'deferred' }))!;
    fake.script(() => openaiText('started late'));
    // Oldest first, as a pass takes them: a start failing since before the run's time limit, one failing since just
    // now (their records cannot be read back into a workflow input), and one that starts.
    const now = Date.now();
    const old = await deferredRun(username, task, 'broken-old', queue, new Date(now - config.RUN_TIMEOUT_MS - 60_000));
    const young = await deferredRun(username, task, 'broken-young', queue, new Date(now - 1_000));
    const good = await deferredRun(username, task, 'good', queue, new Date(now));
    for (const id of [old, young]) await db.models.Run.collection.updateOne({ _id: id as never }, { $set: { payload_json: '{' } });

    const started = await until('the good run to end', async () => {
      const found = await findRun(db.models, good);
      return found?.status === 'ready' && found;
    });
    expect(started.results.at(-1)).to.deep.include({ lastMessage: { role: 'assistant', content: 'started late' } });
    await forgotten(good);

    const given = (await findRun(db.models, old))!;
    expect(given.status).to.equal('error');
    expect(given.results.at(-1)).to.deep.include({ error: `the run could not be started (its start kept failing for over ${Math.ceil(config.RUN_TIMEOUT_MS / 60_000)} min)` });
    await forgotten(old);
    await notStarted(old);
    expect((await api.get('/api/runs/~/default/deferred/broken-old')).body).to.deep.include({ status: 'error' });

    // The young one was tried in the same pass (before the good one) and is kept for the next passes.
    expect((await findRun(db.models, young))!.status).to.equal('pending');
    expect(await deferral(young)).to.not.equal(null);
    expect(logs.lines.some((line) => line.includes('could not start a deferred run') && line.includes(young))).to.equal(true);
    await db.models.DeferredStart.deleteOne({ _id: young });
  });
});
