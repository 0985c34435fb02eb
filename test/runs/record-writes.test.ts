import crypto from 'node:crypto';
import { expect } from 'chai';
import mongoose from 'mongoose';
import type { CommandStartedEvent } from 'mongodb';
import type { Db } from '../../src/store/connect';
import { registerModels } from '../../src/store/models';
import { findRun, readMessages, runWorkflowId } from '../../src/store/runs';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack, type RunningWorker } from '../helpers/stack';

/**
 * How often a run's worker writes its record, every write through the recorder: the run's start is recorded
 * `running` once its first model call has taken RUN_START_WRITE_DELAY_MS (given to the run where it is triggered), or,
 * when the model answers sooner, with the run's end (the first call's write) or its first turn (the workflow's) in one
 * write. Seen through the commands the worker's own connection sends.
 */
describe('runs: the writes of a run\'s record by its worker', () => {
  let db: Db;
  /** The worker's updates of run records, by run id; and the status each of them set. */
  const writes = new Map<string, string[]>();
  const statuses = new Map<string, string[]>();

  before(async () => {
    const conn = mongoose.createConnection(getStack().config.MONGO_URL, { monitorCommands: true, autoIndex: false });
    await conn.asPromise();
    db = { conn, models: registerModels(conn), close: () => conn.close() };
    conn.getClient().on('commandStarted', (e: CommandStartedEvent) => {
      const command = e.command as Record<string, any>;
      if (command[e.commandName] !== 'runs') return;
      const [id, set] =
        e.commandName === 'update' ? [command.updates?.[0]?.q?._id, command.updates?.[0]?.u?.$set] : e.commandName === 'findAndModify' ? [command.query?._id, command.update?.$set] : [];
      if (typeof id !== 'string') return;
      writes.set(id, [...(writes.get(id) ?? []), e.commandName]);
      statuses.set(id, [...(statuses.get(id) ?? []), String(set?.status)]);
    });
  });
  after(() => db.close());
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  /** A worker on a queue of its own, with `overrides`, and an API starting runs there; a task `t` of a new user. */
  async function setUp(overrides: Record<string, string>) {
    const queue = `writes-${crypto.randomBytes(4).toString('hex')}`;
    const worker: RunningWorker = await getStack().startWorker({ TEMPORAL_TASK_QUEUE: queue, ...overrides }, { db });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue, ...overrides });
    const { username, sessionId } = await signedIn();
    const api = apiFor(sessionId, server.url);
    await createTask(api, 'default', 't');
    const signed = new URL(await signedUrl(api, 'default', 't'));
    const trigger = async (run: string) => {
      const res = await postSigned(`${server.url}${signed.pathname}${signed.search}`, { text: 'x' }, { 'run-id': run });
      expect(res.status, res.text).to.equal(201);
      return { url: res.body.url as string, id: runWorkflowId({ owner: username, profile: 'default', task: 't', run }) };
    };
    const stop = async () => {
      await server.close();
      await worker.stop();
    };
    return { api, trigger, stop, username };
  }

  it('writes a run whose model answers before the delay once: its start and its end together', async () => {
    // The delay is long here, so the answer always comes first, however busy the machine.
    const { api, trigger, stop } = await setUp({ RUN_START_WRITE_DELAY_MS: '10000' });
    try {
      getStack().fake.script(() => openaiText('done'));
      const run = await trigger('once');
      const read = await waitForRun(api, run.url);
      expect(read.status).to.equal('ready');
      expect(read.results.map((e: { msg: string }) => e.msg)).to.deep.equal(['run started', 'prompt', 'final answer']);
      expect(writes.get(run.id), 'the worker\'s writes of the record').to.deep.equal(['findAndModify']);
      // The write is the first call's: the workflow completed on its answer, with no local activity (a marker) of its own.
      const history = await getStack().temporal.workflow.getHandle(run.id).fetchHistory();
      const kinds = (history.events ?? []).map((e) => Object.keys(e).find((k) => k.endsWith('EventAttributes')));
      expect(kinds.filter((k) => k === 'markerRecordedEventAttributes'), 'local activities of the workflow').to.have.length(0);
      expect(kinds.filter((k) => k === 'workflowTaskCompletedEventAttributes'), 'workflow tasks').to.have.length(2);
      const record = (await findRun(db.models, run.id))!;
      expect(record).to.deep.include({ status: 'ready', entry_count: 3, started: true });
      expect(await readMessages(db.models, run.id, 0, 1), 'the prompt, message 0').to.deep.equal([{ role: 'user', text: 'Say x' }]);
    } finally {
      await stop();
    }
  });

  it('ends ready, in its workflow as in its record, a run whose first call writes its end while the workflow writes it running', async function () {
    this.timeout(120_000);
    // The workflow writes `running` 20 ms into the first call, which answers 0 to 40 ms in and writes the run's end:
    // of 40 runs at once, some have the two writes cross (the end first, so the `running` write finds the record closed).
    const { api, trigger, stop } = await setUp({ RUN_START_WRITE_DELAY_MS: '20' });
    try {
      let n = 0;
      getStack().fake.script(() => ({ ...openaiText('done'), delayMs: (n++ * 7) % 41 }));
      const runs = await Promise.all(Array.from({ length: 40 }, (_, i) => trigger(`cross-${i}`)));
      const outcomes = await Promise.all(runs.map((run) => getStack().temporal.workflow.getHandle(run.id).result()));
      expect(outcomes.filter((o) => o.status !== 'ready' || o.closedElsewhere), 'workflows that did not end ready on their own answer').to.deep.equal([]);
      for (const run of runs) expect((await waitForRun(api, run.url)).status).to.equal('ready');
    } finally {
      await stop();
    }
  });

  it('records a run running while a slow model thinks (its entries come with the answer, as the run\'s view has them); then its end', async () => {
    const { api, trigger, stop } = await setUp({ RUN_START_WRITE_DELAY_MS: '100' });
    try {
      let answer!: () => void;
      const answered = new Promise<void>((r) => (answer = r));
      getStack().fake.script(async () => {
        await answered;
        return openaiText('done');
      });
      const run = await trigger('slow');
      const running = await until('the record says running while the model has not answered', async () => {
        const record = await findRun(db.models, run.id);
        return record?.status === 'running' && record;
      });
      expect(running.entry_count, 'nothing heard of the call yet').to.equal(0);
      const live = await api.get(new URL(run.url).pathname);
      expect(live.body.status, 'the run\'s own read: the workflow\'s view').to.equal('running');
      // The record says `running` at the delay after the call was sent, which on a busy machine may be before it reached the model.
      await until('the model call in flight', () => getStack().fake.requests.length === 1);
      answer();
      const read = await waitForRun(api, run.url);
      expect(read.results.map((e: { msg: string }) => e.msg)).to.deep.equal(['run started', 'prompt', 'final answer']);
      expect(writes.get(run.id)).to.deep.equal(['update', 'findAndModify']);
      expect(await readMessages(db.models, run.id, 0, 1), 'the prompt, message 0').to.deep.equal([{ role: 'user', text: 'Say x' }]);
    } finally {
      await stop();
    }
  });

  it('records the start before a first answer that calls a tool is acted on', async () => {
    const { api, trigger, stop } = await setUp({ RUN_START_WRITE_DELAY_MS: '10000' });
    try {
      // No servlet is installed: the tool is unknown, and its error goes back to the model, which then answers.
      getStack().fake.script([openaiToolCall([{ name: 'nothing__here', arguments: {} }]), openaiText('done')]);
      const run = await trigger('tool');
      const read = await waitForRun(api, run.url);
      expect(read.status).to.equal('ready');
      expect(read.results.map((e: { msg: string }) => e.msg)).to.deep.equal([
        'run started',
        'prompt',
        'tool call: nothing__here',
        'tool result: nothing__here (error)',
        'final answer',
      ]);
      // The start with the model's answer (before its tools run), then the turn's entries; then the end.
      expect(writes.get(run.id)).to.deep.equal(['update', 'update', 'findAndModify']);
    } finally {
      await stop();
    }
  });

  it('ends a run cancelled before its start was written with its first entries and the cancel, each once', async () => {
    const { api, trigger, stop, username } = await setUp({ RUN_START_WRITE_DELAY_MS: '10000' });
    try {
      getStack().fake.script(() => ({ hang: true }));
      const run = await trigger('cancelled');
      await until('the model call', () => getStack().fake.requests.length > 0);
      expect((await findRun(db.models, run.id))!.status, 'the start not written yet').to.equal('pending');
      expect(writes.get(run.id), 'nothing written by the worker yet').to.equal(undefined);
      expect((await api.post(`${new URL(run.url).pathname}/cancel`)).status).to.equal(202);
      const read = await waitForRun(api, run.url);
      expect(read.status).to.equal('error');
      // A run cancelled during its first call is prepared (writing nothing), and its end's one write records the start
      // too. (A
      // workflow task the server refused, a new event having come meanwhile, is run again and makes the write again:
      // an update that changes nothing.)
      expect(writes.get(run.id)![0], 'one write').to.equal('findAndModify');
      expect(statuses.get(run.id)!.every((s) => s === 'error'), 'the end, and only the end').to.equal(true);
      expect(read.results.map((e: { msg: string }) => e.msg)).to.deep.equal(['run started', 'prompt', `cancelled by ${username}`]);
    } finally {
      await stop();
    }
  });

  it('writes nothing of a run whose workflow was terminated during its first model call, though the call goes on until its next heartbeat', async function () {
    this.timeout(90_000);
    // The call learns that its workflow was terminated at its next heartbeat (every 10 s here).
    const { api, trigger, stop } = await setUp({ RUN_START_WRITE_DELAY_MS: '10000' });
    try {
      getStack().fake.script(() => ({ hang: true }));
      const run = await trigger('terminated');
      await until('the model call', () => getStack().fake.requests.length > 0);
      await getStack().temporal.workflow.getHandle(run.id).terminate('stopped by the operator');
      const read = await waitForRun(api, run.url);
      expect(read.results.map((e: { error?: string }) => e.error)).to.deep.equal(['terminated: stopped by the operator']);
      const closed = await findRun(db.models, run.id);
      await until('the call stopped (its heartbeat told it)', () => getStack().fake.requests[0]?.abortedAt !== undefined, 60_000);
      // (A model that answered before that heartbeat would have its call try the run's end, which the closed record refuses.)
      expect(writes.get(run.id), 'no write of the worker\'s: the call stopped without an answer').to.equal(undefined);
      expect(await findRun(db.models, run.id), 'the closed record, unchanged').to.deep.equal(closed);
    } finally {
      await stop();
    }
  });
});
