import crypto from 'node:crypto';
import { expect } from 'chai';
import { workflowSteps } from '../helpers/history';
import type { WorkflowHandle } from '@temporalio/client';
import { getStack, type RunningWorker } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { Types } from 'mongoose';
import { recordOutsideEnd, recordProgress } from '../../src/runs/recorder';
import { explainCondition, insertRun, readEntries, runWorkflowId } from '../../src/store/runs';
import { runQuery, WORKFLOW, type RunTaskWorkflow } from '../../src/contract/messages';
import { lastUserText, openaiToolCall } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import type { RunInput } from '../../src/contract/types';
import { closeFromWorkflow, GONE_REASON } from '../../src/runs/endings';

const recordOf = (runId: string) => getStack().db.models.Run.findById(runId).lean();

describe('runs: every run ends', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('ends a run an operator terminated in error with the operator\'s reason, on the next read and in its list', async () => {
    const { api, username } = await signedIn();
    const { fake, temporal } = getStack();
    await createTask(api, 'default', 'stopped');
    fake.script(() => ({ hang: true }));
    const trigger = await postSigned(await signedUrl(api, 'default', 'stopped'), { text: 'x' }, { 'run-id': 't1' });
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'stopped', run: 't1' });
    await until('the run to call the provider', async () => fake.requests.length > 0);
    // Recorded `running` RUN_START_WRITE_DELAY_MS into the call: a run stopped after that. Its first entries come with
    // the call's outcome, which no one hears now: the record has only the operator's reason.
    await until('the record to say running', async () => (await recordOf(id))?.status === 'running');
    await temporal.workflow.getHandle(id).terminate('stopped by the operator');
    const run = await waitForRun(api, trigger.body.url);
    expect(run.status).to.equal('error');
    expect(run.results.at(-1)).to.deep.include({ error: 'terminated: stopped by the operator', lastMessage: { role: 'system', content: 'terminated: stopped by the operator' } });
    expect(run.results).to.have.length(1);
    const list = await api.get('/api/runs/~/default/stopped');
    expect(list.body[0]).to.deep.include({ name: 't1', status: 'error' });
  });

  it('ends a terminated run through the reconciler, without any read, so run lists show it', async function () {
    this.timeout(60_000);
    const { sessionId, username } = await signedIn();
    const stack = getStack();
    const queue = `reconcile-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, RECONCILE_INTERVAL_MS: '1000' });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'unread');
      stack.fake.script(() => ({ hang: true }));
      await postSigned(await signedUrl(api, 'default', 'unread'), { text: 'x' }, { 'run-id': 'u1' });
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'unread', run: 'u1' });
      await until('the run to start', async () => (await recordOf(id))?.status === 'running');
      await stack.temporal.workflow.getHandle(id).terminate('nobody reads this run');
      const ended = await until('the reconciler', async () => {
        const record = await recordOf(id);
        return record?.status === 'error' && record;
      });
      expect(ended.results.at(-1)).to.deep.include({ error: 'terminated: nobody reads this run' });
      const list = await api.get('/api/runs/~/default/unread');
      expect(list.body[0].status).to.equal('error');
      expect(list.body[0].results.at(-1).error).to.equal('terminated: nobody reads this run');
      const state = await stack.db.models.ServiceState.findById(`reconcile/${queue}`).lean();
      expect(state, 'the reconciler keeps where it stopped').to.not.equal(null);
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  /**
   * A run on a queue of its own (its own worker, with `workerEnv`, and API) whose workflow holds a tool call it has not
   * written: a tool that runs until the servlet's time limit. Asked of the workflow, not through the API, so no process
   * of the API reads the run and none holds its entries. `body` gets the run's workflow, its worker, its API and path.
   */
  async function withHeldToolCall(
    task: string,
    workerEnv: Record<string, string>,
    body: (run: { id: string; handle: WorkflowHandle; worker: RunningWorker; api: Api; path: string }) => Promise<void>,
  ) {
    const { sessionId, username } = await signedIn();
    const stack = getStack();
    const queue = `${task}-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, ...workerEnv });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      await installServlet(api, username, 'infinite-loop', 'loop');
      await createTask(api, 'default', task);
      stack.fake.script([openaiToolCall([{ name: 'loop__spin', arguments: {} }]), { hang: true }]);
      const trigger = await postSigned(await signedUrl(api, 'default', task), { text: 'x' }, { 'run-id': 'r1' });
      const id = runWorkflowId({ owner: username, profile: 'default', task, run: 'r1' });
      const handle = stack.temporal.workflow.getHandle(id);
      await until('the workflow to hold the tool call', async () => (await handle.query(runQuery, { from: 0 })).entries.some((e) => e.msg === 'tool call: loop__spin'));
      const before = (await recordOf(id))!;
      expect(before.results.map((e) => e.msg), 'the record lacks the tool call').to.not.include('tool call: loop__spin');
      await body({ id, handle, worker, api, path: new URL(trigger.body.url).pathname });
    } finally {
      await server.close();
      await worker.stop();
    }
  }

  it('keeps, when the reconciler ends a terminated run no one read, the entries its workflow held but had not written', async function () {
    this.timeout(60_000);
    await withHeldToolCall('held', { RECONCILE_INTERVAL_MS: '1000' }, async ({ id, handle }) => {
      await handle.terminate('stopped by the operator');
      const ended = await until('the reconciler', async () => {
        const record = await recordOf(id);
        return record?.status === 'error' && record;
      });
      expect(ended.results.map((e) => e.msg)).to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt', 'tool call: loop__spin', 'terminated: stopped by the operator']);
    });
  });

  it('keeps, when a cancel finds the run\'s workflow terminated, the entries it held, and answers 409', async function () {
    this.timeout(60_000);
    // No reconciler pass within the test: the cancel is what ends the run.
    await withHeldToolCall('cut', { RECONCILE_INTERVAL_MS: '3600000' }, async ({ id, handle, api, path }) => {
      await handle.terminate('stopped by the operator');
      const res = await api.post(`${path}/cancel`);
      expect(res.status, res.text).to.equal(409);
      expect(res.body.error.code).to.equal('run_closed');
      const ended = (await recordOf(id))!;
      expect(ended.status).to.equal('error');
      expect(ended.results.map((e) => e.msg)).to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt', 'tool call: loop__spin', 'terminated: stopped by the operator']);
    });
  });

  it('ends a terminated run with its record\'s entries when no worker can say what its workflow held', async function () {
    this.timeout(60_000);
    await withHeldToolCall('unheard', { SERVLET_CALL_TIMEOUT_MS: '2000' }, async ({ id, handle, worker }) => {
      await handle.terminate('stopped by the operator');
      // No worker polls the run's queue now: the closed workflow cannot be replayed to answer.
      await worker.stop();
      const stack = getStack();
      const deps = { models: stack.db.models, temporal: stack.temporal, logger: stack.logger, config: stack.config };
      expect(await closeFromWorkflow(deps, id, 'TERMINATED'), 'as the reconciler ends it').to.equal(true);
      const ended = (await recordOf(id))!;
      expect(ended.status).to.equal('error');
      expect(ended.results.map((e) => e.msg)).to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt', 'terminated: stopped by the operator']);
    });
  });

  it('ends a run whose workflow history was deleted in error, saying so', async () => {
    const { api, username } = await signedIn();
    const { fake, temporal } = getStack();
    await createTask(api, 'default', 'deleted');
    fake.script(() => ({ hang: true }));
    const trigger = await postSigned(await signedUrl(api, 'default', 'deleted'), { text: 'x' }, { 'run-id': 'd1' });
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'deleted', run: 'd1' });
    await until('the run to call the provider', async () => fake.requests.length > 0);
    // A run that had started: its record says `running` (RUN_START_WRITE_DELAY_MS into the call). (One whose workflow
    // vanished before its first write is a start that was lost: a read starts it again, as it does after a trigger's crash.)
    await until('the record to say running', async () => (await recordOf(id))?.status === 'running');
    await temporal.workflowService.deleteWorkflowExecution({ namespace: temporal.options.namespace, workflowExecution: { workflowId: id } });
    const run = await waitForRun(api, trigger.body.url);
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.equal(GONE_REASON);
  });

  it('ends a run whose workflow timed out in error, saying so', async () => {
    const { api: client, username } = await signedIn();
    const { temporal, db } = getStack();
    const identity = { owner: username, profile: 'default', task: 'late', run: 'l1' };
    const id = runWorkflowId(identity);
    // A run whose workflow no worker ever ran, and which Temporal closed at its execution timeout.
    await createTask(client, 'default', 'late');
    const taskDoc = (await db.models.Task.findOne({ owner: username, name: 'late' }).lean())!;
    await insertRun(db.models, { identity, taskId: taskDoc._id, taskVersion: 1, runner: 'openai', payload: {}, at: new Date() });
    await db.models.Run.updateOne({ _id: id }, { $set: { started: true, status: 'running' } });
    await temporal.workflow.start<RunTaskWorkflow>(WORKFLOW.run, { workflowId: id, taskQueue: `nobody-${crypto.randomBytes(4).toString('hex')}`, args: [{} as RunInput], workflowExecutionTimeout: 1_000 });
    await until('the workflow to time out', async () => (await temporal.workflow.getHandle(id).describe()).status.name === 'TIMED_OUT');
    const run = await waitForRun(client, `${getStack().apiUrl}/api/runs/${username}/default/late/l1`);
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.equal("the run's workflow timed out in Temporal before the run could end");
  });

  it('serves the record when the workflow cannot answer, saying so, and the live run once it can', async function () {
    this.timeout(60_000);
    const { sessionId, username } = await signedIn();
    const stack = getStack();
    // A queue no worker polls yet: the workflow exists, but nothing can answer its query.
    const queue = `idle-${crypto.randomBytes(4).toString('hex')}`;
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue, LIVE_READ_WAIT_MS: '300' });
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'waiting');
      const trigger = await postSigned(await signedUrl(api, 'default', 'waiting'), { text: 'x' }, { 'run-id': 'w1' });
      const path = new URL(trigger.body.url).pathname;
      for (let i = 0; i < 3; i++) {
        const read = await api.get(path);
        expect(read.status).to.equal(200);
        expect(read.headers.get('run-source'), `read ${i + 1}`).to.equal('record');
        expect(read.body).to.deep.include({ name: 'w1', status: 'pending', results: [] });
      }
      const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue });
      try {
        const run = await waitForRun(api, trigger.body.url);
        expect(run.status).to.equal('ready');
        expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say x');
      } finally {
        await worker.stop();
      }
      expect((await recordOf(runWorkflowId({ owner: username, profile: 'default', task: 'waiting', run: 'w1' })))!.status).to.equal('ready');
    } finally {
      await server.close();
    }
  });

  it('ends a run whose template takes too long in error naming the limit, while a run beside it completes', async function () {
    this.timeout(90_000);
    const { sessionId, username } = await signedIn();
    const stack = getStack();
    // A worker of its own whose template limit outlasts a loaded machine's slowest run beside it (the suite's 2 s
    // did not, once, in a full suite): the run beside must reach its model while the deep template still expands.
    const queue = `template-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, TEMPLATE_TIMEOUT_MS: '8000' });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      // 2^30 renders of the innermost text: minutes of work, under the depth limit (32) a task may be saved with.
      await createTask(api, 'default', 'deep', { prompt: `${'{{#a}}'.repeat(30)}x${'{{/a}}'.repeat(30)}` });
      await createTask(api, 'default', 'plain');
      const deep = await postSigned(await signedUrl(api, 'default', 'deep'), { a: [1, 2] }, { 'run-id': 'deep' });
      const plain = await postSigned(await signedUrl(api, 'default', 'plain'), { text: 'beside' }, { 'run-id': 'plain' });
      const plainRun = await waitForRun(api, plain.body.url);
      expect(plainRun.results.at(-1).lastMessage.content).to.equal('echo: Say beside');
      const deepRun = await waitForRun(api, deep.body.url, 60_000);
      expect(deepRun.status).to.equal('error');
      expect(deepRun.results.at(-1).error).to.match(/^the prompt template took longer than 8000 ms to expand \(limit TEMPLATE_TIMEOUT_MS\)$/);
      expect(deepRun.results.map((e: { msg: string }) => e.msg), 'nothing prepared: only the reason').to.have.length(1);
      // Beside it: the plain run reached its model while the deep template was still expanding (its end, under load,
      // may come after the deep run's).
      const plainAsked = stack.fake.requests.find((r) => lastUserText(r).includes('beside'))!.at;
      expect(plainAsked, 'the plain run asked its model before the deep run ended').to.be.lessThan(Date.parse(deepRun.modified_at));
      // Expanded once: the first model call's failure is the run's end, with no preparation of its own after it.
      // Its history once the workflow has closed (local activities are in it once their workflow task completed).
      const handle = stack.temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task: 'deep', run: 'deep' }));
      await handle.result();
      const { events } = await handle.fetchHistory();
      // (The record says `running` once the call has taken RUN_START_WRITE_DELAY_MS, 250 ms: well before the template's limit.)
      expect(workflowSteps(events!), 'activities and local activities of the run').to.deep.equal(['firstModelCall', 'local:recordRun', 'local:recordRun']);
    } finally {
      await server.close();
      await worker.stop();
    }
  });
});

describe('runs: a closed record never changes (the recorder, src/runs/recorder.ts)', () => {
  const entry = (msg: string) => ({ msg, time: 1, level: 30 });
  const newRun = async (run: string, liveSlot?: number) => {
    const { db } = getStack();
    const identity = { owner: 'writes', profile: 'default', task: 't', run: `${run}-${crypto.randomBytes(4).toString('hex')}` };
    const record = await insertRun(db.models, { identity, taskId: new Types.ObjectId(), taskVersion: 1, runner: 'openai', payload: {}, at: new Date(), liveSlot });
    return { id: record._id, createdAt: record.created_at.getTime() };
  };

  it('writes an open record in one step, and gives back what announcing its end needs', async () => {
    const { models } = getStack().db;
    const run = await newRun('open', 3);
    expect(await recordProgress(models, run, { status: 'running', modifiedAt: Date.now(), entries: { from: 0, items: [entry('run started')] } })).to.deep.equal({ written: true });
    expect((await recordOf(run.id))).to.deep.include({ status: 'running', entry_count: 1, started: true });
    const written = await recordProgress(models, run, { status: 'ready', modifiedAt: Date.now(), entries: { from: 1, items: [entry('final')] } });
    expect(written.written && written.closed).to.deep.include({ _id: run.id, owner: 'writes', live_slot: 3, status: 'ready' });
    expect(written.written && written.closed!.created_at.getTime()).to.equal(run.createdAt);
    expect((await recordOf(run.id))!.results.map((e) => (e as { msg: string }).msg)).to.deep.equal(['run started', 'final']);
  });

  it('leaves a closed record, and another run of the name, as they are: no field and no page written', async () => {
    const { models } = getStack().db;
    const run = await newRun('closed');
    expect((await recordOutsideEnd(models, run.id, 'ended from outside')).written).to.equal(true);
    const closed = await recordOf(run.id);
    const late = (from: number, status: 'running' | 'ready') => ({ status, modifiedAt: Date.now(), entries: { from, items: [entry('late')] } });
    const refused = { written: false, because: 'closed' };
    expect(await recordProgress(models, run, late(1, 'running')), 'within the first page').to.deep.equal(refused);
    expect(await recordProgress(models, run, late(40, 'running')), 'past the first page').to.deep.equal(refused);
    expect(await recordProgress(models, run, late(1, 'ready'))).to.deep.equal(refused);
    expect(await recordProgress(models, run, late(40, 'ready'))).to.deep.equal(refused);
    expect(await recordOutsideEnd(models, run.id, 'again')).to.deep.equal(refused);
    expect(await recordOf(run.id)).to.deep.equal(closed);
    expect(await models.RunPage.countDocuments({ run: run.id })).to.equal(0);

    const other = await newRun('renamed');
    const before = await recordOf(other.id);
    const earlier = { id: other.id, createdAt: other.createdAt - 1000 };
    expect(await recordProgress(models, earlier, late(0, 'running'))).to.deep.equal({ written: false, because: 'another-run' });
    expect(await recordProgress(models, earlier, late(0, 'ready'))).to.deep.equal({ written: false, because: 'another-run' });
    expect(await recordOf(other.id)).to.deep.equal(before);
  });

  it('lets the first of two concurrent ends win, within the first page and past it: the other is told "closed"', async () => {
    const { models } = getStack().db;
    for (const before of [0, 40]) {
      for (let round = 0; round < 6; round++) {
        const run = await newRun(`race-${before}-${round}`);
        if (before > 0) {
          const opened = await recordProgress(models, run, { status: 'running', modifiedAt: Date.now(), entries: { from: 0, items: Array.from({ length: before }, (_, i) => entry(`e${i}`)) } });
          expect(opened).to.deep.equal({ written: true });
        }
        // A model call writing the run's end and a cancel (the workflow's) or an outside close, all at once.
        const writes = await Promise.all([
          recordProgress(models, run, { status: 'ready', modifiedAt: Date.now(), entries: { from: before, items: [entry('final answer')] } }),
          recordProgress(models, run, { status: 'error', modifiedAt: Date.now(), entries: { from: before, items: [entry('cancelled by ann')] } }),
          recordOutsideEnd(models, run.id, 'terminated: by an operator'),
        ]);
        const winners = writes.filter((w) => w.written);
        expect(winners, `${before} entries, round ${round}: ${JSON.stringify(writes)}`).to.have.length(1);
        expect(writes.filter((w) => !w.written)).to.deep.equal([{ written: false, because: 'closed' }, { written: false, because: 'closed' }]);
        const record = (await recordOf(run.id))!;
        const won = writes.indexOf(winners[0]!);
        expect(record.status).to.equal(['ready', 'error', 'error'][won]);
        expect(record.entry_count).to.equal(before + 1);
        const [last] = await readEntries(models, record, before, before + 1);
        expect((last as { msg: string }).msg).to.equal(['final answer', 'cancelled by ann', 'terminated: by an operator'][won]);
      }
    }
  });

  it('keeps a record closed when a progress write races its end: the progress is told "closed", or was written before it', async () => {
    const { models } = getStack().db;
    for (const before of [1, 40]) {
      for (let round = 0; round < 30; round++) {
        const run = await newRun(`progress-${before}-${round}`);
        const opened = await recordProgress(models, run, { status: 'running', modifiedAt: Date.now(), entries: { from: 0, items: Array.from({ length: before }, (_, i) => entry(`e${i}`)) } });
        expect(opened).to.deep.equal({ written: true });
        // A model call writing the run's end while the workflow writes a retry's `pending` (a stalled store's late write).
        const [end, progress] = await Promise.all([
          recordProgress(models, run, { status: 'ready', modifiedAt: Date.now(), entries: { from: before, items: [entry('final answer')] } }),
          recordProgress(models, run, { status: 'pending', modifiedAt: Date.now(), entries: { from: before, items: [entry('retrying')] } }),
        ]);
        const record = (await recordOf(run.id))!;
        // Both may be written, the progress first; never the progress after the end.
        expect(record.status, `${before} entries, round ${round}: ${JSON.stringify([end, progress])}`).to.equal(end.written ? 'ready' : 'pending');
        if (end.written) {
          const [last] = await readEntries(models, record, before, before + 1);
          expect((last as { msg: string }).msg).to.equal('final answer');
        }
      }
    }
  });

  it('counts a write found already made by an earlier attempt of it (its answer lost) as written', async () => {
    const { models } = getStack().db;
    const run = await newRun('again');
    const end = { status: 'ready' as const, modifiedAt: Date.now(), entries: { from: 0, items: [entry('final answer')] } };
    expect((await recordProgress(models, run, end)).written).to.equal(true);
    expect(await recordProgress(models, run, end)).to.deep.equal({ written: true, earlier: true });
    expect(await recordProgress(models, run, { ...end, entries: { from: 0, items: [entry('a'), entry('b')] } })).to.deep.equal({ written: false, because: 'closed' });
    expect(await recordProgress(models, { ...run, id: `${run.id}-none` }, end)).to.deep.equal({ written: false, because: 'gone' });
  });

  it('finds the record of a conditional write by its _id index, not by a scan of the runs', async () => {
    const { models } = getStack().db;
    const run = await newRun('explain');
    const plan = JSON.stringify(await explainCondition(models, run.id, { open: true, createdAt: run.createdAt, entryCount: 0 }));
    // FerretDB on SQLite: the query plan searches the table by its _id index (scripts/install-tools.sh's fix);
    // MongoDB: an IDHACK or index scan of `_id_`. Neither reads the whole collection.
    expect(plan, plan).to.match(/USING INDEX|IDHACK|EXPRESS_IXSCAN|"indexName":"_id_"|_id_/);
    expect(plan, plan).not.to.match(/SCAN runs|COLLSCAN/);
  });
});
