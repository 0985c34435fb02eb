import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startServer } from '../../src/server';
import { runWorkflowId } from '../../src/store/runs';
import { GONE_REASON } from '../../src/runs/endings';
import { getStack, OPERATOR_KEYS } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { openEvents } from '../helpers/events';

/** Triggers `task` (Variant B, default profile) with a run name through `baseUrl`'s API; returns the run's path. */
async function trigger(api: Api, task: string, run: string, text = 'x', baseUrl?: string): Promise<string> {
  const signed = await signedUrl(api, 'default', task);
  const url = baseUrl ? `${baseUrl}${new URL(signed).pathname}${new URL(signed).search}` : signed;
  const res = await postSigned(url, { text }, { 'run-id': run });
  expect(res.status, res.text).to.equal(201);
  return new URL(res.body.url).pathname;
}

/** A gate the fake provider waits on before answering. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const metric = async (baseUrl: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(await (await fetch(`${baseUrl}/metrics`)).text())?.[1] ?? NaN);

describe('runs: live event streams', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('streams a live multi-turn run\'s entries in order with their ids, its status changes, then `end`, and closes', async () => {
    const { api, username, sessionId } = await signedIn('ev');
    const { fake, config } = getStack();
    await installServlet(api, username, 'greeter', 'hello');
    await createTask(api, 'default', 'turns');
    const second = gate();
    fake.script([
      openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]),
      async () => {
        await second.opened;
        return openaiText('all done');
      },
    ]);
    // A prompt over RUN_INLINE_BYTES: its entry holds a reference, which the stream resolves as reads do.
    const path = await trigger(api, 'turns', 'r1', 'p'.repeat(config.RUN_INLINE_BYTES + 10));
    const stream = await openEvents(sessionId, path);
    expect(stream.res.status).to.equal(200);
    expect(stream.res.headers.get('content-type')).to.match(/^text\/event-stream/);
    expect(stream.res.headers.get('cache-control')).to.equal('no-store');
    expect(stream.res.headers.get('x-accel-buffering')).to.equal('no');
    await until('the tool call\'s entries', () => stream.entries().some((e) => e.data!.includes('Hello, Ann!')));
    expect(stream.ended()).to.equal(false);
    second.open();
    await stream.closed;
    expect(stream.ended(), 'the server closed the stream').to.equal(true);

    const run = (await api.get(path)).body;
    expect(run.status).to.equal('ready');
    const named = stream.events.filter((e) => e.event);
    const entries = named.filter((e) => e.event === 'entry');
    expect(entries.map((e) => e.id)).to.deep.equal(run.results.map((_: unknown, i: number) => String(i)));
    expect(entries.map((e) => JSON.parse(e.data!))).to.deep.equal(run.results);
    const prompt = entries.map((e) => JSON.parse(e.data!)).find((e) => e.exchange?.role === 'user');
    expect(prompt.exchange.content, 'the stored prompt, resolved').to.have.length.above(config.RUN_INLINE_BYTES);
    const statuses = named.filter((e) => e.event === 'status');
    expect(statuses.length).to.be.above(0);
    for (const s of statuses) {
      expect(s.id).to.equal(undefined);
      expect(JSON.parse(s.data!)).to.have.keys('status', 'modified_at');
      expect(JSON.parse(s.data!).status).to.be.oneOf(['pending', 'running']);
    }
    for (let i = 1; i < statuses.length; i++) expect(statuses[i]!.data, 'a status event is a change').to.not.equal(statuses[i - 1]!.data);
    const end = named.at(-1)!;
    expect(end.event).to.equal('end');
    expect(end.id).to.equal(undefined);
    expect(JSON.parse(end.data!)).to.deep.equal({ status: 'ready', modified_at: run.modified_at });
    expect(named.filter((e) => e.event === 'end')).to.have.length(1);
  });

  it('resumes after a cut from Last-Event-ID with exactly the entries after it, on the Variant A path too', async () => {
    const { api, username, sessionId } = await signedIn('ev');
    const { fake } = getStack();
    await installServlet(api, username, 'greeter', 'hello');
    await createTask(api, 'default', 'resume');
    const gates = [gate(), gate()];
    fake.script([
      openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]),
      async () => {
        await gates[0]!.opened;
        return openaiToolCall([{ id: 'c2', name: 'hello__greet', arguments: { name: 'Bob' } }]);
      },
      async () => {
        await gates[1]!.opened;
        return openaiText('both greeted');
      },
    ]);
    const path = await trigger(api, 'resume', 'r1');
    const first = await openEvents(sessionId, path);
    await until('the first turn\'s entries', () => first.entries().some((e) => e.data!.includes('Hello, Ann!')));
    first.abort();
    await first.closed;
    const seen = first.entries();
    const last = seen.at(-1)!.id!;

    gates[0]!.open();
    gates[1]!.open();
    const bad = await openEvents(sessionId, path, { lastEventId: 'seven' });
    expect(bad.res.status).to.equal(400);
    const error = (await bad.res.json()) as any;
    expect(error.error.code).to.equal('invalid_request');
    expect(error.error.message).to.match(/^header\.last-event-id: /);

    const rest = await openEvents(sessionId, `/api/profiles/~/default/tasks/resume/runs/r1`, { lastEventId: last });
    expect(rest.res.status).to.equal(200);
    await rest.closed;
    expect(rest.ended()).to.equal(true);
    const run = await waitForRun(api, `http://x${path}`);
    const resumed = rest.entries();
    expect(resumed.length, 'entries after the cut').to.be.above(0);
    expect(Number(resumed[0]!.id)).to.equal(Number(last) + 1);
    const all = [...seen, ...resumed];
    expect(all.map((e) => e.id)).to.deep.equal(run.results.map((_: unknown, i: number) => String(i)));
    expect(all.map((e) => JSON.parse(e.data!))).to.deep.equal(run.results);
    expect(rest.events.filter((e) => e.event).at(-1)!.event).to.equal('end');
  });

  it('streams a closed run\'s entries and `end` at once, and from Last-Event-ID only the rest', async () => {
    const { api, sessionId } = await signedIn('ev');
    const { config } = getStack();
    await createTask(api, 'default', 'closed');
    const path = await trigger(api, 'closed', 'c1', 'q'.repeat(config.RUN_INLINE_BYTES + 10));
    const run = await waitForRun(api, `http://x${path}`);
    const whole = await openEvents(sessionId, path);
    await whole.closed;
    expect(whole.ended()).to.equal(true);
    const named = whole.events.filter((e) => e.event);
    expect(named.map((e) => e.event)).to.deep.equal([...run.results.map(() => 'entry'), 'end']);
    expect(named.slice(0, -1).map((e) => JSON.parse(e.data!))).to.deep.equal(run.results);
    expect(named.slice(0, -1).map((e) => e.id)).to.deep.equal(run.results.map((_: unknown, i: number) => String(i)));
    expect(JSON.parse(named.at(-1)!.data!)).to.deep.equal({ status: run.status, modified_at: run.modified_at });

    const rest = await openEvents(sessionId, path, { lastEventId: '0' });
    await rest.closed;
    expect(rest.entries().map((e) => e.id)).to.deep.equal(run.results.slice(1).map((_: unknown, i: number) => String(i + 1)));
    const past = await openEvents(sessionId, path, { lastEventId: String(run.results.length + 5) });
    await past.closed;
    expect(past.events.filter((e) => e.event).map((e) => e.event)).to.deep.equal(['end']);
  });

  it('answers 401 without a session and 404 for another user\'s run or an unknown one, as reads do', async () => {
    const owner = await signedIn('ev');
    const other = await signedIn('ev');
    await createTask(owner.api, 'default', 'private');
    const path = await trigger(owner.api, 'private', 'p1');
    await waitForRun(owner.api, `http://x${path}`);
    const anonymous = await openEvents(undefined, path);
    expect(anonymous.res.status).to.equal(401);
    const theirs = await openEvents(other.sessionId, path);
    expect(theirs.res.status).to.equal(404);
    expect(((await theirs.res.json()) as any).error.code).to.equal('not_found');
    expect((await openEvents(other.sessionId, `/api/profiles/${owner.username}/default/tasks/private/runs/p1`)).res.status).to.equal(404);
    expect((await openEvents(owner.sessionId, '/api/runs/~/default/private/nope')).res.status).to.equal(404);
    const badName = await openEvents(owner.sessionId, '/api/runs/~/default/private/bad%20name');
    expect(badName.res.status).to.equal(400);
  });

  it('sends a heartbeat comment every EVENTS_HEARTBEAT_MS while nothing happens', async () => {
    const { sessionId, api } = await signedIn('ev');
    const { fake } = getStack();
    const other = await startApi({ EVENTS_HEARTBEAT_MS: '100' });
    await createTask(api, 'default', 'quiet');
    fake.script(() => ({ hang: true }));
    const path = await trigger(api, 'quiet', 'q1');
    const stream = await openEvents(sessionId, path, { baseUrl: other.url });
    await until('three heartbeats', () => stream.events.filter((e) => e.comment === 'keep-alive').length >= 3);
    expect(stream.ended()).to.equal(false);
    stream.abort();
    await stream.closed;
    expect((await api.post(`${path}/cancel`)).status).to.equal(202);
    await waitForRun(api, `http://x${path}`);
    await other.close();
  });

  it('shares one run\'s reads among its streams: twenty streams cost about the Temporal queries of one', async function () {
    this.timeout(60_000);
    const { sessionId, api } = await signedIn('ev');
    const { fake } = getStack();
    // Windows measured in heartbeats of the first stream: the server's own clock, however loaded the machine.
    const other = await startApi({ LIVE_RUN_CACHE_MS: '200', EVENTS_HEARTBEAT_MS: '500' });
    await createTask(api, 'default', 'shared');
    fake.script(() => ({ hang: true }));
    const path = await trigger(api, 'shared', 's1');
    const first = await openEvents(sessionId, path, { baseUrl: other.url });
    const beats = () => first.events.filter((e) => e.comment === 'keep-alive').length;
    /** Queries while the first stream receives `n` heartbeats (after the next one). */
    const queriesOver = async (n: number) => {
      const start = beats() + 1;
      await until('a heartbeat', () => beats() >= start);
      const before = await metric(other.url, 'ptr_live_run_queries_total');
      await until(`${n} heartbeats`, () => beats() >= start + n);
      return (await metric(other.url, 'ptr_live_run_queries_total')) - before;
    };
    await until('the run\'s status', () => first.events.some((e) => e.event === 'status'));
    const alone = await queriesOver(4);
    expect(alone, 'a live stream keeps reading its run').to.be.above(0);
    const more = await Promise.all(Array.from({ length: 19 }, () => openEvents(sessionId, path, { baseUrl: other.url })));
    await until('every stream\'s first status', () => more.every((s) => s.events.some((e) => e.event === 'status')));
    const together = await queriesOver(4);
    expect(together, `queries with 20 streams (${together}) against 1 (${alone})`).to.be.at.most(2 * alone + 2);
    for (const s of [first, ...more]) s.abort();
    await Promise.all([first, ...more].map((s) => s.closed));
    // Once its last stream has gone, nothing reads the run any more in that process (the run is still live).
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await metric(other.url, 'ptr_live_run_queries_total');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await metric(other.url, 'ptr_live_run_queries_total'), 'queries after every stream left').to.equal(after);
    expect((await api.post(`${path}/cancel`)).status).to.equal(202);
    await waitForRun(api, `http://x${path}`);
    await other.close();
  });

  it('keeps a stream open while the workflow cannot be read, and follows the run once it can', async function () {
    this.timeout(90_000);
    const { sessionId, api } = await signedIn('ev');
    const { config } = getStack();
    // Runs triggered through this API go to a queue no worker polls yet: their workflows cannot answer a query.
    const queue = `${config.TEMPORAL_TASK_QUEUE}-unread`;
    const other = await startApi({ TEMPORAL_TASK_QUEUE: queue, LIVE_READ_WAIT_MS: '200', EVENTS_HEARTBEAT_MS: '200' });
    await createTask(api, 'default', 'unread');
    const path = await trigger(api, 'unread', 'u1', 'x', other.url);
    const stream = await openEvents(sessionId, path, { baseUrl: other.url });
    await until('the record\'s status', () => stream.events.some((e) => e.event === 'status'));
    expect(JSON.parse(stream.events.find((e) => e.event === 'status')!.data!).status).to.equal('pending');
    await until('heartbeats while the workflow does not answer', () => stream.events.filter((e) => e.comment === 'keep-alive').length >= 3);
    expect(stream.ended()).to.equal(false);
    const worker = await getStack().startWorker({ ...OPERATOR_KEYS, TEMPORAL_TASK_QUEUE: queue });
    await stream.closed;
    expect(stream.ended()).to.equal(true);
    const run = await waitForRun(api, `http://x${path}`);
    expect(stream.entries().map((e) => JSON.parse(e.data!))).to.deep.equal(run.results);
    expect(JSON.parse(stream.events.filter((e) => e.event).at(-1)!.data!)).to.deep.equal({ status: 'ready', modified_at: run.modified_at });
    await worker.stop();
    await other.close();
  });

  it('ends the stream of a run deleted with its task; the run is then a 404', async () => {
    const { sessionId, api } = await signedIn('ev');
    const { fake } = getStack();
    await createTask(api, 'default', 'doomed');
    fake.script(() => ({ hang: true }));
    const path = await trigger(api, 'doomed', 'd1');
    const stream = await openEvents(sessionId, path);
    await until('the run\'s status', () => stream.events.some((e) => e.event === 'status'));
    expect((await api.delete('/api/tasks/~/default/doomed')).status).to.equal(204);
    await stream.closed;
    expect(stream.ended(), 'the server ended the stream').to.equal(true);
    // The cascade cancels the workflow before it deletes the record: a cancellation recorded first is the run's end
    // (`error`), and the stream says so; otherwise the stream closes without `end`.
    const ends = stream.events.filter((e) => e.event === 'end');
    expect(ends.length, 'at most one `end`').to.be.at.most(1);
    if (ends.length === 1) expect(JSON.parse(ends[0]!.data!).status, 'a deleted run\'s `end`').to.equal('error');
    expect((await openEvents(sessionId, path)).res.status).to.equal(404);
  });

  it('ends the stream with `end` in error when an operator terminates the run\'s workflow', async () => {
    const { sessionId, api, username } = await signedIn('ev');
    const { fake, temporal } = getStack();
    await createTask(api, 'default', 'terminated');
    // A first turn (a tool the profile lacks: its error goes back to the model), then a second call that hangs: the
    // run has entries before the operator stops it.
    fake.script([openaiToolCall([{ name: 'nothing__here', arguments: {} }]), { hang: true }]);
    const path = await trigger(api, 'terminated', 't1');
    const stream = await openEvents(sessionId, path);
    await until('the run to call the provider again', () => fake.requests.length > 1);
    await until('the run\'s first entries', () => stream.entries().length >= 2);
    await temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task: 'terminated', run: 't1' })).terminate('stopped by the operator');
    await stream.closed;
    expect(stream.ended()).to.equal(true);
    const run = await waitForRun(api, `http://x${path}`);
    expect(run.results.at(-1).error).to.equal('terminated: stopped by the operator');
    const named = stream.events.filter((e) => e.event);
    expect(named.at(-1)!.event).to.equal('end');
    expect(JSON.parse(named.at(-1)!.data!)).to.deep.equal({ status: 'error', modified_at: run.modified_at });
    expect(stream.entries().map((e) => JSON.parse(e.data!))).to.deep.equal(run.results);
  });

  it('keeps in the terminated run\'s record the entries its stream showed that the workflow had not written', async function () {
    this.timeout(60_000);
    const { sessionId, api, username } = await signedIn('ev');
    const { fake, temporal } = getStack();
    await installServlet(api, username, 'infinite-loop', 'loop');
    await createTask(api, 'default', 'cut-tool');
    // A tool that runs until the servlet's time limit: its call's entry is the workflow's alone until the turn ends.
    fake.script([openaiToolCall([{ name: 'loop__spin', arguments: {} }]), { hang: true }]);
    const path = await trigger(api, 'cut-tool', 'c1');
    const stream = await openEvents(sessionId, path);
    await until('the tool call streamed', () => stream.entries().some((e) => JSON.parse(e.data!).msg === 'tool call: loop__spin'));
    await temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task: 'cut-tool', run: 'c1' })).terminate('stopped by the operator');
    await stream.closed;
    const run = await waitForRun(api, `http://x${path}`);
    expect(run.results.map((e: { msg: string }) => e.msg)).to.deep.equal(['run started', 'tools offered: loop__spin, loop__ping', 'prompt', 'tool call: loop__spin', 'terminated: stopped by the operator']);
    expect(stream.entries().map((e) => JSON.parse(e.data!)), 'the stream and the record agree, the reason included').to.deep.equal(run.results);
  });

  it('ends a run whose workflow execution is deleted while it is polled and streamed, in error saying so', async function () {
    this.timeout(60_000);
    const { sessionId, username } = await signedIn('ev');
    const { fake, temporal } = getStack();
    // Queries every 5 s: the execution is deleted just after one, so the next finds it gone, not being deleted.
    const other = await startApi({ LIVE_RUN_CACHE_MS: '5000' });
    const api = apiFor(sessionId, other.url);
    await createTask(api, 'default', 'erased');
    fake.script(() => ({ hang: true }));
    const path = await trigger(api, 'erased', 'e1', 'x', other.url);
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'erased', run: 'e1' });
    await until('the run to call the provider', () => fake.requests.length > 0);
    const stream = await openEvents(sessionId, path, { baseUrl: other.url });
    await until('a live read', async () => (await api.get(path)).headers.get('run-source') === 'live');
    const queries = await metric(other.url, 'ptr_live_run_queries_total');
    await until('a fresh query', async () => (await metric(other.url, 'ptr_live_run_queries_total')) > queries);
    await new Promise((r) => setTimeout(r, 300));
    await temporal.workflowService.deleteWorkflowExecution({ namespace: temporal.options.namespace, workflowExecution: { workflowId: id } });

    const run = await waitForRun(api, `http://x${path}`, 30_000);
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.equal(GONE_REASON);
    await stream.closed;
    expect(stream.ended()).to.equal(true);
    const named = stream.events.filter((e) => e.event);
    expect(named.at(-1)!.event).to.equal('end');
    expect(JSON.parse(named.at(-1)!.data!)).to.deep.equal({ status: 'error', modified_at: run.modified_at });
    expect(JSON.parse(stream.entries().at(-1)!.data!).error).to.equal(GONE_REASON);
    await other.close();
  });

  it('ends its open streams without `end` when the API stops, so stopping does not wait on them', async () => {
    const { sessionId, api } = await signedIn('ev');
    const { fake, configWith } = getStack();
    await createTask(api, 'default', 'stopping');
    fake.script(() => ({ hang: true }));
    const path = await trigger(api, 'stopping', 's1');
    const running = await startServer(configWith({ PORT: '0', LOG_LEVEL: 'silent' }));
    const url = `http://127.0.0.1:${(running.server.address() as AddressInfo).port}`;
    const stream = await openEvents(sessionId, path, { baseUrl: url });
    expect(stream.res.status).to.equal(200);
    await until('the run\'s status', () => stream.events.some((e) => e.event === 'status'));
    // Without the streams ended, the server would wait on them for ever (they are never idle).
    await running.close();
    await stream.closed;
    expect(stream.ended(), 'the server ended the stream (not cut it)').to.equal(true);
    expect(stream.events.filter((e) => e.event === 'end'), 'the run has not ended').to.have.length(0);
    expect((await api.post(`${path}/cancel`)).status).to.equal(202);
    await waitForRun(api, `http://x${path}`);
  });
});
