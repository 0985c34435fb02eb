import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, uniqueUser, type Api } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall } from '../helpers/fake-provider';
import { startOwnStack, type OwnStack } from '../helpers/own-stack';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { openEvents } from '../helpers/events';
import { createSession } from '../../src/store/sessions';
import { findRun, runWorkflowId } from '../../src/store/runs';

/** The held run's entries while it waits on its second model call. */
const HELD_ENTRIES = ['run started', 'prompt', 'tool call: nothing__here', 'tool result: nothing__here (error)'];

/** Polls until `check` holds (states the test cannot be told about). */
async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The API's last logged request failure, to say why a status was not the one expected. */
const lastFailure = () => getStack().logs.lines.filter((l) => l.includes('request failed')).slice(-1)[0] ?? '(none logged)';

/** Every entry that must appear once in a run that ended once. */
function expectEndedOnce(run: any) {
  const msgs = run.results.map((e: any) => e.msg);
  expect(msgs.filter((m: string) => m === 'run started'), `${run.name}: ${msgs.join(' | ')}`).to.have.length(1);
  expect(msgs.filter((m: string) => m === 'final answer'), `${run.name}: ${msgs.join(' | ')}`).to.have.length(1);
}

describe('runs: a dependency stalls', function () {
  this.timeout(180_000);
  let own: OwnStack | undefined;
  let api: Api;
  let sessionId: string;

  /** The held run's event stream, opened before the stall: it stays open through it and ends with the run. */
  const followHeld = (held: string) => openEvents(sessionId, new URL(held).pathname, { baseUrl: own!.apiUrl });
  async function expectStreamedToTheEnd(stream: Awaited<ReturnType<typeof followHeld>>, run: any) {
    await stream.closed;
    expect(stream.ended(), 'the server ended the stream').to.equal(true);
    expect(stream.entries().map((e) => JSON.parse(e.data!)), 'every entry once, as the run has them').to.deep.equal(run.results);
    const named = stream.events.filter((e) => e.event);
    expect(named.at(-1)!.event).to.equal('end');
    expect(JSON.parse(named.at(-1)!.data!).status).to.equal('ready');
  }

  /** A stack of its own, a user with a session and a task `t` whose runs with text "hold" wait on the provider. */
  async function setUp(overrides: Record<string, string>) {
    own = await startOwnStack({ DEPENDENCY_TIMEOUT_MS: '1000', LIVE_READ_WAIT_MS: '300', RECONCILE_INTERVAL_MS: '1000', PROVIDER_RETRY_INITIAL_MS: '200', PROVIDER_RETRY_MAX_MS: '1000', PROVIDER_MAX_ATTEMPTS: '30', ...overrides });
    const username = uniqueUser('stall');
    const { id } = await createSession(own.db.models, username, 24);
    sessionId = id;
    api = apiFor(id, own.apiUrl);
    await createTask(api, 'default', 't');
    // A run with text "hold" asks for a tool (unknown: its error goes back to the model), then waits on its second
    // call: its first entries are the workflow's and the record's by then.
    const toolResultIn = (req: { body?: { messages?: Array<{ role: string }> } }) => (req.body?.messages ?? []).some((m) => m.role === 'tool');
    getStack().fake.script((req) => {
      if (!lastUserText(req).includes('hold')) return openaiText(`echo: ${lastUserText(req)}`);
      return toolResultIn(req) ? { hang: true } : openaiToolCall([{ name: 'nothing__here', arguments: {} }]);
    });
    const url = await signedUrl(api, 'default', 't');
    const held = await postSigned(url, { text: 'hold' }, { 'run-id': 'held' });
    expect(held.status).to.equal(201);
    // Waiting on the provider, its first turn recorded: a run between writes.
    const heldId = runWorkflowId({ owner: username, profile: 'default', task: 't', run: 'held' });
    await until('the held run to wait on the provider', async () => {
      const record = await findRun(own!.db.models, heldId);
      return record?.status === 'running' && record.entry_count === HELD_ENTRIES.length;
    });
    return { url, held: held.body.url as string };
  }

  beforeEach(() => getStack().fake.reset());
  afterEach(async () => {
    getStack().fake.reset();
    await own?.stop();
    own = undefined;
  });

  it('while MongoDB stalls, serves live reads from the workflow, answers 503 naming MongoDB for the rest, and every run ends once after', async () => {
    const { url, held } = await setUp({ SESSION_CACHE_MS: '10000', RUN_RECORD_CACHE_MS: '0' });
    const stream = await followHeld(held);
    await until('the stream\'s first entries', async () => stream.entries().length >= 2);
    own!.stall('mongodb');
    // The session is cached (SESSION_CACHE_MS), the record is not: the run comes from its workflow alone.
    const live = await api.get(new URL(held).pathname);
    expect(live.status, `${live.text} ${lastFailure()}`).to.equal(200);
    expect(live.headers.get('run-source')).to.equal('live');
    expect(live.body).to.deep.include({ name: 'held', status: 'running' });
    expect(live.body.results.map((e: any) => e.msg)).to.deep.equal(HELD_ENTRIES);

    const ready = await fetch(`${own!.apiUrl}/readyz`);
    expect(ready.status).to.equal(503);
    expect(await ready.json()).to.deep.include({ temporal: 'ok' }).and.not.include({ mongodb: 'ok' });

    const tasks = await api.get('/api/tasks/~/default');
    expect(tasks.status, lastFailure()).to.equal(503);
    expect(tasks.headers.get('retry-after')).to.equal('1');
    expect(tasks.body.error.code).to.equal('mongodb_unavailable');

    const trigger = await postSigned(url, { text: 'during' }, { 'run-id': 'during' });
    expect(trigger.status, lastFailure()).to.equal(503);
    expect(trigger.body.error).to.deep.include({ code: 'mongodb_unavailable', run: 'during' });

    // Past the session's cache bound the stall does not keep it alive: it cannot be checked, so 503, not an answer.
    await new Promise((r) => setTimeout(r, 10_500));
    expect(stream.ended(), 'the stream stays open while MongoDB stalls').to.equal(false);
    const later = await api.get(new URL(held).pathname);
    expect(later.status, lastFailure()).to.equal(503);
    expect(later.body.error.code).to.equal('mongodb_unavailable');

    own!.resume('mongodb');
    getStack().fake.reset(); // the held call fails; the run retries it and ends
    const again = await postSigned(url, { text: 'during' }, { 'run-id': 'during' });
    expect(again.status, again.text).to.be.oneOf([200, 201]);
    for (const runUrl of [held, again.body.url]) {
      const run = await waitForRun(api, runUrl, 60_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expectEndedOnce(run);
      if (runUrl === held) await expectStreamedToTheEnd(stream, run);
    }
  });

  it('ends once a quick run whose start-and-end write meets a MongoDB stall: the start is never counted without its write', async () => {
    // The write of `running` waits for the model's answer (a long delay), so the run's start goes with its end, and
    // MongoDB stalls as the model answers: that write, and the start's own write after it, fail (or land late).
    own = await startOwnStack({ DEPENDENCY_TIMEOUT_MS: '1000', PROVIDER_RETRY_INITIAL_MS: '200', PROVIDER_RETRY_MAX_MS: '1000', PROVIDER_MAX_ATTEMPTS: '30', RUN_START_WRITE_DELAY_MS: '10000' });
    const { id } = await createSession(own.db.models, uniqueUser('stall'), 24);
    api = apiFor(id, own.apiUrl);
    await createTask(api, 'default', 't');
    let stalled = false;
    getStack().fake.script((req) => {
      if (lastUserText(req).includes('quick') && !stalled) {
        stalled = true;
        own!.stall('mongodb');
      }
      return openaiText(`echo: ${lastUserText(req)}`);
    });
    const trigger = await postSigned(await signedUrl(api, 'default', 't'), { text: 'quick' }, { 'run-id': 'quick' });
    expect(trigger.status).to.equal(201);
    await until('the model call', async () => stalled);
    // Longer than both writes' DEPENDENCY_TIMEOUT_MS.
    await new Promise((r) => setTimeout(r, 4_000));
    own.resume('mongodb');
    const run = await waitForRun(api, trigger.body.url, 90_000);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expectEndedOnce(run);
    const msgs = run.results.map((e: any) => e.msg);
    expect(msgs.slice(0, 2), msgs.join(' | ')).to.deep.equal(['run started', 'prompt']);
    expect(msgs.at(-1)).to.equal('final answer');
    // Asked again when both writes failed; once when the stalled write landed after the stall (then the record's
    // account stands).
    expect(getStack().fake.requests.filter((r) => lastUserText(r).includes('quick')).length).to.be.within(1, 2);
  });

  it('while Temporal stalls, serves live reads from the record, answers a trigger 503 naming Temporal and the run, and starts and ends that run after', async () => {
    const { url, held } = await setUp({});
    const stream = await followHeld(held);
    await until('the stream\'s first entries', async () => stream.entries().length >= 2);
    own!.stall('temporal');
    // Within the live-run cache and the read's wait (LIVE_READ_WAIT_MS) reads turn to the record.
    const live = await until('a read from the record', async () => {
      const read = await api.get(new URL(held).pathname);
      return read.headers.get('run-source') === 'record' && read;
    }, 10_000);
    expect(live.status).to.equal(200);
    expect(live.body, JSON.stringify(live.body)).to.deep.include({ name: 'held', status: 'running' });
    expect(live.body.results.map((e: any) => e.msg)).to.deep.equal(HELD_ENTRIES);

    const ready = await fetch(`${own!.apiUrl}/readyz`);
    expect(ready.status).to.equal(503);
    expect(await ready.json()).to.deep.include({ mongodb: 'ok' }).and.not.include({ temporal: 'ok' });

    const trigger = await postSigned(url, { text: 'during' }, { 'run-id': 'during' });
    expect(trigger.status).to.equal(503);
    expect(trigger.headers.get('retry-after')).to.equal('1');
    expect(trigger.body.error).to.deep.include({ code: 'temporal_unavailable', run: 'during' });
    const during = trigger.body.error.url as string;
    expect(stream.ended(), 'the stream stays open while Temporal stalls').to.equal(false);

    own!.resume('temporal');
    getStack().fake.reset();
    // Nobody retries the trigger: the reconciler starts the run it recorded.
    for (const runUrl of [held, during]) {
      const run = await waitForRun(api, runUrl, 90_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expectEndedOnce(run);
      if (runUrl === held) await expectStreamedToTheEnd(stream, run);
    }
    expect(getStack().fake.requests.filter((r) => lastUserText(r).includes('during')), 'one provider call for the run started late').to.have.length(1);
  });
});
