import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { FOLLOWED_POLL_MS } from '../../activities/followed-runs';
import { findRun } from '../../src/store/runs';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { openEvents, type StreamEvent } from '../helpers/events';
import { openaiText, openaiToolCall, type FakeReply } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack, type RunningWorker } from '../helpers/stack';

const ANSWER = ['The ', 'answer ', 'comes ', 'slowly, ', 'piece ', 'by ', 'piece, ', 'as ', 'it ', 'is ', 'written.'];

/** An answer the fake sends as a stream of `pieces`, `delayMs` apart. */
const slowly = (pieces: string[], delayMs: number, more: Partial<FakeReply> = {}): FakeReply => ({
  ...openaiText(pieces.join('')),
  chunks: pieces,
  chunkDelayMs: delayMs,
  ...more,
});

const deltas = (events: StreamEvent[]) => events.filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data!) as { text?: string; reset?: true });

/**
 * A worker and an API of their own (a queue of their own) with `settings`. Their provider base URL is the fake's under
 * a path of their own: an endpoint that once answered a stream with plain JSON is not streamed to again by the
 * process (providers/stream-fallback.ts), and other tests' fake answers must not decide that for these.
 */
function ownWorkerAndApi(name: string, settings: Record<string, string>) {
  let worker: RunningWorker | undefined;
  let server: { url: string; close(): Promise<void> } | undefined;
  before(async () => {
    const all = {
      TEMPORAL_TASK_QUEUE: `${name}-${crypto.randomBytes(4).toString('hex')}`,
      OPENAI_BASE_URL: `${getStack().fake.url}/${name}/v1`,
      ...settings,
    };
    worker = await getStack().startWorker(all);
    server = await startApi(all);
  });
  after(async () => {
    await server?.close();
    await worker?.stop();
  });
  return {
    get url() {
      return server!.url;
    },
  };
}

describe('runs: the answer streamed as it is written, end to end', function () {
  this.timeout(90_000);
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  const streaming = ownWorkerAndApi('stream-text', {});
  const notStreaming = ownWorkerAndApi('stream-off', { PROVIDER_STREAM: 'off' });

  async function user(base: string) {
    const { username, sessionId } = await signedIn('st');
    const api = apiFor(sessionId, base);
    await createTask(api, 'default', 'talk');
    return { username, sessionId, api };
  }

  async function trigger(api: Api, run: string) {
    const res = await postSigned(await signedUrl(api, 'default', 'talk'), { text: 'x' }, { 'run-id': run });
    expect(res.status, res.text).to.equal(201);
    return { url: res.body.url as string, path: new URL(res.body.url as string).pathname };
  }

  async function runId(owner: string, run: string): Promise<string> {
    return until(`the record of ${run}`, async () => (await findRun(getStack().db.models, { owner, profile: 'default', task: 'talk', run }))?._id);
  }

  /** Resolves once the API marked the run followed and the worker has polled the followers since. */
  async function followed(id: string) {
    await until('the run marked followed', async () => (await getStack().db.models.RunFollow.findById(id).lean()) !== null);
    await sleep(FOLLOWED_POLL_MS + 500);
  }

  const textDocument = (id: string) => getStack().db.models.RunText.collection.findOne({ _id: id as never });

  it('sends a followed run growing delta events before its answer\'s entry, from a text document the turn\'s end deletes', async () => {
    const { username, sessionId, api } = await user(streaming.url);
    let id = '';
    // The follower arrives once the call has reached the provider, which answers once the worker knows of it.
    getStack().fake.script([
      async () => {
        await followed(await until('the run id', () => id));
        return slowly(ANSWER, 250);
      },
    ]);
    const { url, path } = await trigger(api, 'a1');
    id = await runId(username, 'a1');
    await until('the call sent', () => getStack().fake.requests.length === 1);
    const stream = await openEvents(sessionId, path, { baseUrl: streaming.url });
    const during = await until('the text document during the call', async () => (await textDocument(id)) ?? undefined);
    expect(ANSWER.join('')).to.include(String(during.text));
    await stream.closed;
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage).to.deep.equal({ role: 'assistant', content: ANSWER.join('') });
    expect(getStack().fake.requests[0]!.body.stream, 'the call streamed').to.equal(true);

    const texts = deltas(stream.events).filter((d) => d.text !== undefined).map((d) => d.text!);
    expect(texts.length, 'more than one delta').to.be.above(1);
    for (let i = 1; i < texts.length; i++) expect(texts[i]!.startsWith(texts[i - 1]!), 'each delta the text so far').to.equal(true);
    expect(ANSWER.join('').startsWith(texts.at(-1)!)).to.equal(true);
    const named = stream.events.filter((e) => e.event);
    const answerEntry = named.findIndex((e) => e.event === 'entry' && e.data!.includes('written.'));
    expect(answerEntry, 'the stored answer comes after the deltas').to.be.above(named.map((e) => e.event).lastIndexOf('delta'));
    await until('the text document deleted after the turn', async () => (await textDocument(id)) === null);
  });

  it('writes no text document for a run nobody follows, whose streamed answer is the same', async () => {
    const { username, api } = await user(streaming.url);
    getStack().fake.script([slowly(ANSWER, 150)]);
    const { url } = await trigger(api, 'b1');
    const id = await runId(username, 'b1');
    let seen = 0;
    let status = 'pending';
    while (status !== 'ready' && status !== 'error') {
      if (await textDocument(id)) seen++;
      status = (await api.get(new URL(url).pathname)).body.status;
      await sleep(20);
    }
    expect(seen, 'text documents seen during the call').to.equal(0);
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage).to.deep.equal({ role: 'assistant', content: ANSWER.join('') });
    expect(getStack().fake.requests[0]!.body.stream, 'the call streamed').to.equal(true);
    expect(await textDocument(id)).to.equal(null);
  });

  it('resets the followers\' text when a stream cut mid-answer is retried, and ends ready with the whole answer', async () => {
    const { username, sessionId, api } = await user(streaming.url);
    let id = '';
    const first = ANSWER.slice(0, 6);
    getStack().fake.script([
      async () => {
        await followed(await until('the run id', () => id));
        // Events: the role's chunk, then the pieces; cut after the first half of them.
        return slowly(first, 250, { cutAfterChunks: 1 + first.length });
      },
      slowly(ANSWER, 150),
    ]);
    const { url, path } = await trigger(api, 'c1');
    id = await runId(username, 'c1');
    await until('the call sent', () => getStack().fake.requests.length === 1);
    const stream = await openEvents(sessionId, path, { baseUrl: streaming.url });
    await stream.closed;
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage).to.deep.equal({ role: 'assistant', content: ANSWER.join('') });
    expect(getStack().fake.requests, 'the cut call, then its retry').to.have.length(2);

    const sent = deltas(stream.events);
    const reset = sent.findIndex((d) => d.reset);
    expect(reset, 'a reset').to.be.above(0);
    expect(sent.slice(0, reset).every((d) => d.text !== undefined && first.join('').startsWith(d.text)), 'the cut call\'s text before the reset').to.equal(true);
    const after = sent.slice(reset + 1).filter((d) => d.text !== undefined);
    expect(after.length, 'the retried call\'s text after the reset').to.be.above(0);
    expect(ANSWER.join('').startsWith(after.at(-1)!.text!)).to.equal(true);
    await until('the text document deleted after the turn', async () => (await textDocument(id)) === null);
  });

  it('never streams with PROVIDER_STREAM=off, even a followed run\'s call: no delta, no text document, the same answer', async () => {
    const { username, sessionId, api } = await user(notStreaming.url);
    let id = '';
    // A first turn held until the run is followed (a tool the profile lacks: its error goes back to the model), so
    // the second call starts with a follower.
    getStack().fake.script([
      async () => {
        await followed(await until('the run id', () => id));
        return openaiToolCall([{ name: 'nothing__here', arguments: {} }]);
      },
      slowly(ANSWER, 100),
    ]);
    const { url, path } = await trigger(api, 'd1');
    id = await runId(username, 'd1');
    const stream = await openEvents(sessionId, path, { baseUrl: notStreaming.url });
    let seen = 0;
    while (!stream.ended()) {
      if (await textDocument(id)) seen++;
      await Promise.race([stream.closed, sleep(50)]);
    }
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage).to.deep.equal({ role: 'assistant', content: ANSWER.join('') });
    expect(getStack().fake.requests).to.have.length(2);
    for (const req of getStack().fake.requests) expect(req.body, 'a call that does not stream').to.not.have.any.keys('stream', 'stream_options');
    expect(seen, 'text documents seen').to.equal(0);
    expect(deltas(stream.events)).to.deep.equal([]);
  });
});
