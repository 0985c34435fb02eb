import crypto from 'node:crypto';
import { expect } from 'chai';
import { workflowSteps } from '../helpers/history';
import mongoose from 'mongoose';
import type { CommandStartedEvent } from 'mongodb';
import { registerModels } from '../../src/store/models';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { createTask, postSigned, signedUrl, until } from '../helpers/runs';
import { recordProgress } from '../../src/runs/recorder';
import { entryCount, findRun } from '../../src/store/runs';
import { finalEntry } from '../../src/contract/constants';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { openEvents } from '../helpers/events';
import { runWorkflowId } from '../../src/temporal/ids';
import { expandTemplate } from '../../activities/template/expand';

/**
 * A prompt and trigger data whose expansion takes about `ms` here, or longer when the machine is busy: 2^depth empty
 * passes through nested sections over `a: [1, 2]`, each over `b` (16 to 32 items) at the bottom. Measured small (the
 * fastest of three), scaled from there: a calibration, not an assertion.
 */
function slowPrompt(ms: number): { prompt: string; payload: { a: number[]; b: number[] } } {
  const prompt = (depth: number) => `${'{{#a}}'.repeat(depth)}{{#b}}{{/b}}${'{{/a}}'.repeat(depth)}done`;
  const payload = (items: number) => ({ a: [1, 2], b: Array.from({ length: items }, (_, i) => i) });
  const took = (): number => {
    const began = performance.now();
    expandTemplate(prompt(13), payload(16));
    return performance.now() - began;
  };
  /** The expansion's cost in passes over 16 items of `b` at the bottom. */
  const passes = ms / (Math.min(took(), took(), took()) / 2 ** 13);
  const depth = Math.max(0, Math.floor(Math.log2(passes)));
  return { prompt: prompt(depth), payload: payload(Math.round((16 * passes) / 2 ** depth)) };
}

describe('runs: a cancel racing the run\'s own writes', () => {
  it('ends `error` a run cancelled while its first call still prepares it, and nothing writes its record after', async function () {
    this.timeout(180_000);
    const { username, sessionId } = await signedIn();
    const stack = getStack();
    // A worker and an API of their own queue, the worker's template limit far above what the slow prompt takes.
    const queue = `prepare-race-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, TEMPLATE_TIMEOUT_MS: '170000' });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      const slow = slowPrompt(5_000);
      await createTask(api, 'default', 'slow-prompt', { prompt: slow.prompt });
      const trigger = await postSigned(await signedUrl(api, 'default', 'slow-prompt'), slow.payload, { 'run-id': 'r1' });
      expect(trigger.status, trigger.text).to.equal(201);
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'slow-prompt', run: 'r1' });
      const handle = stack.temporal.workflow.getHandle(id);
      const metric = async (name: string) => Number(new RegExp(`^${name}\\{activity="firstModelCall"(,outcome="[a-z]+")?\\} (\\d+)`, 'm').exec(await worker.worker.metrics.metrics())?.[2] ?? NaN);
      // The first call is preparing (expanding the slow prompt): the model has not been asked.
      await until('the first call in flight', async () => (await metric('ptr_activities_in_flight')) === 1);
      const cancel = await api.post(`${new URL(trigger.body.url).pathname}/cancel`);
      expect(cancel.status, cancel.text).to.equal(202);
      const outcome = await handle.result();
      // The workflow wrote the cancel; or, when its task was run again (Temporal rejects a completion when an event
      // came in meanwhile), found it written, and left the record as it was.
      expect(outcome.status === 'error' || outcome.closedElsewhere === true, JSON.stringify(outcome)).to.equal(true);
      expect(workflowSteps((await handle.fetchHistory()).events ?? []), 'the workflow\'s steps').to.not.include('callModel');

      // Prepared again by the workflow, so the record shows the prompt before the cancel; each once.
      const ended = (await findRun(stack.db.models, id))!;
      expect(ended.status).to.equal('error');
      const msgs = ended.results.map((e) => e.msg);
      expect(msgs.at(-1)).to.equal(`cancelled by ${username}`);
      expect(msgs.filter((m) => m.startsWith('cancelled by')), 'the cancel, once').to.have.length(1);
      expect(msgs.filter((m) => m === 'run started'), 'the start, at most once').to.have.length.at.most(1);

      // Once the first call has ended in the worker (its preparation done, the model perhaps asked), the record is as
      // the cancel left it: the call writes none.
      await until('the first call ended in the worker', async () => (await metric('ptr_activities_total')) >= 1 && (await metric('ptr_activities_in_flight')) === 0, 120_000);
      expect(await findRun(stack.db.models, id), 'the closed record, unchanged').to.deep.equal(ended);
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  it('stops a run whose record was closed from outside while its model call failed: the record, its reads and its stream stay as that close left them', async function () {
    this.timeout(120_000);
    const { username, sessionId } = await signedIn();
    const stack = getStack();
    // The retry waits long enough for a stream to see anything the workflow would add after the record was closed.
    const queue = `closed-elsewhere-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { TEMPORAL_TASK_QUEUE: queue, PROVIDER_RETRY_INITIAL_MS: '3000' };
    const worker = await stack.startWorker(settings);
    const server = await startApi(settings);
    let stream: Awaited<ReturnType<typeof openEvents>> | undefined;
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'lost-end');
      stack.fake.script(() => ({ hang: true }));
      // Its own text: the fake provider is shared, and runs of earlier tests may still call it.
      const text = `lost end of ${username}`;
      const ours = () => stack.fake.requests.filter((r) => lastUserText(r).includes(text));
      const trigger = await postSigned(await signedUrl(api, 'default', 'lost-end'), { text }, { 'run-id': 'l1' });
      const path = new URL(trigger.body.url).pathname;
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'lost-end', run: 'l1' });
      stream = await openEvents(sessionId, path, { baseUrl: server.url });
      await until('the model call', () => ours().length > 0);
      // The workflow records the run `running` RUN_START_WRITE_DELAY_MS into the call: the outside end is written after that.
      await until('the record to say running', async () => (await findRun(stack.db.models, id))?.status === 'running');
      // An end written from outside the workflow (as an operator's tool, or a legacy run's call whose worker was lost
      // right after its write, would leave it): the workflow then sees the call fail (here: its connection cut) and
      // tries again, first recording the wait.
      const before = (await findRun(stack.db.models, id))!;
      expect(await stack.db.models.LiveRun.countDocuments({ run: id }), 'the run holds a place among its owner\'s live runs').to.equal(1);
      await recordProgress(stack.db.models, { id, createdAt: before.created_at.getTime() }, { status: 'ready', modifiedAt: Date.now(), entries: { from: entryCount(before), items: [finalEntry('the lost call\'s answer')] } });
      stack.fake.reset();
      const outcome = await stack.temporal.workflow.getHandle(id).result();
      expect(outcome, 'the workflow stops, saying the record ended the run').to.deep.include({ closedElsewhere: true });
      expect(ours(), 'the model is not asked again').to.have.length(0);
      // The outside write closed the record without announcing it: the workflow's write that found it closed did.
      expect(await stack.db.models.LiveRun.countDocuments({ run: id }), 'the run\'s place given back').to.equal(0);

      const record = (await findRun(stack.db.models, id))!;
      expect(record.status).to.equal('ready');
      // The record as the outside end left it: what it had (its start's `running`, no entries yet: they come with the
      // call's outcome), then that end.
      expect(record.results.map((e) => (e as { msg: string }).msg)).to.deep.equal([...before.results.map((e) => (e as { msg: string }).msg), 'final answer']);
      const read = await api.get(path);
      expect(read.body.status).to.equal('ready');
      expect(read.body.results).to.deep.equal(record.results);
      // The stream sent the record's entries, nothing the workflow held that the record did not take, and its end.
      const end = await until('the stream\'s end', () => stream!.events.find((e) => e.event === 'end'));
      expect(stream.entries().map((e) => JSON.parse(e.data!))).to.deep.equal(record.results);
      expect(JSON.parse(end.data!).status).to.equal('ready');
    } finally {
      stream?.abort();
      await server.close();
      await worker.stop();
    }
  });
  it('stops, writing nothing more, a run whose end it found already written when the model answered: no failure of its own', async function () {
    this.timeout(120_000);
    const { username, sessionId } = await signedIn();
    const stack = getStack();
    // The worker's own connection, watched: each end it tries to write is first claimed in run_ends.
    const conn = mongoose.createConnection(stack.config.MONGO_URL, { monitorCommands: true, autoIndex: false });
    await conn.asPromise();
    const claims: string[] = [];
    conn.getClient().on('commandStarted', (e: CommandStartedEvent) => {
      const command = e.command as Record<string, any>;
      if (e.commandName === 'insert' && command.insert === 'run_ends') claims.push(String(command.documents?.[0]?._id));
    });
    const queue = `answer-after-end-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { TEMPORAL_TASK_QUEUE: queue, RUN_START_WRITE_DELAY_MS: '100' };
    const worker = await stack.startWorker(settings, { db: { conn, models: registerModels(conn), close: () => conn.close() } });
    const server = await startApi(settings);
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'answer-after-end');
      let answer!: () => void;
      const answered = new Promise<void>((r) => (answer = r));
      const text = `answer after end of ${username}`;
      stack.fake.script(async () => {
        await answered;
        return openaiText('the late answer');
      });
      const trigger = await postSigned(await signedUrl(api, 'default', 'answer-after-end'), { text }, { 'run-id': 'a1' });
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'answer-after-end', run: 'a1' });
      await until('the record to say running', async () => (await findRun(stack.db.models, id))?.status === 'running');
      // Another end (from outside the workflow) is written while the call waits for the model; then the model answers.
      const before = (await findRun(stack.db.models, id))!;
      await recordProgress(stack.db.models, { id, createdAt: before.created_at.getTime() }, { status: 'ready', modifiedAt: Date.now(), entries: { from: entryCount(before), items: [finalEntry('the other answer')] } });
      answer();
      const outcome = await stack.temporal.workflow.getHandle(id).result();
      expect(outcome, 'the workflow stops, saying the record ended the run').to.deep.include({ closedElsewhere: true });
      // The workflow's end lost its claim; told so, it tried no other end (an `error` saying the run had already ended,
      // which its view would show readers until that write too found the record closed).
      expect(claims.filter((c) => c.startsWith(`${id}@`)), 'the ends the worker tried to write').to.have.length(1);
      const record = (await findRun(stack.db.models, id))!;
      expect(record.status).to.equal('ready');
      expect(record.results.map((e) => (e as { msg: string; content?: unknown }).msg)).to.deep.equal([...before.results.map((e) => (e as { msg: string }).msg), 'final answer']);
      const read = await api.get(new URL(trigger.body.url).pathname);
      expect(read.body.results).to.deep.equal(record.results);
    } finally {
      stack.fake.reset();
      await server.close();
      await worker.stop();
      await conn.close();
    }
  });
});
