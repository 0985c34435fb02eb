import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createClient } from '../../src/cli/ptr/client';
import { Failure, UsageError } from '../../src/cli/ptr/errors';
import { followRun, type FollowHandlers } from '../../src/cli/ptr/follow';
import { createRunView } from '../../src/cli/ptr/run-view';
import type { Context } from '../../src/cli/ptr/context';

type Respond = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/**
 * A loopback server standing in for the API: its n-th request is answered by `answers[n]` (the last one again past
 * the end). It records what each request asked for.
 */
async function scriptedApi(answers: Respond[]) {
  const requests: Array<{ url: string; lastEventId?: string }> = [];
  const server = http.createServer((req, res) => {
    requests.push({ url: req.url!, lastEventId: req.headers['last-event-id'] as string | undefined });
    answers[Math.min(requests.length, answers.length) - 1]!(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const stream = (res: http.ServerResponse, ...events: string[]) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(': run events\n\n');
  for (const event of events) res.write(event);
};
const entry = (id: number, msg: string) => `id: ${id}\nevent: entry\ndata: ${JSON.stringify({ msg, time: 1, level: 30 })}\n\n`;
const END = `event: end\ndata: ${JSON.stringify({ status: 'ready', modified_at: '2026-01-01T00:00:00.000Z' })}\n\n`;

/** Handlers that record what following reported. */
function recorder() {
  const seen = { entries: [] as Array<[number, string]>, reconnecting: [] as Array<[string, number]> };
  const on: FollowHandlers = {
    entry: (id, e) => seen.entries.push([id, e.msg]),
    status: () => undefined,
    reconnecting: (reason, delayMs) => seen.reconnecting.push([reason, delayMs]),
  };
  return { seen, on };
}

describe('ptr: following a run (in process, against a loopback server)', () => {
  let api: Awaited<ReturnType<typeof scriptedApi>> | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });
  const client = () => createClient({ origin: api!.origin, session: 'ptr/u/s' });

  it('gives up after its attempts when every stream closes at once, having waited each delay in turn', async () => {
    api = await scriptedApi([
      (_req, res) => {
        stream(res);
        res.end();
      },
    ]);
    const { seen, on } = recorder();
    const err = await followRun(client(), '/api/runs/~/p/t/r', on, { retryDelaysMs: [5, 10, 15] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Failure);
    expect((err as Failure).code).to.equal('stream_failed');
    expect((err as Failure).message).to.equal('gave up following the run after 4 attempts in a row: the stream closed before the run ended');
    expect(api.requests.map((r) => r.url)).to.deep.equal(Array(4).fill('/api/runs/~/p/t/r/events'));
    expect(seen.reconnecting.map(([, delay]) => delay)).to.deep.equal([5, 10, 15]);
  });

  it('takes a silent stream as dropped and resumes after the last entry it brought', async () => {
    api = await scriptedApi([
      // an entry, then nothing: no end, no comment, the connection held open
      (_req, res) => stream(res, entry(0, 'first')),
      (_req, res) => {
        stream(res, entry(1, 'second'), END);
        res.end();
      },
    ]);
    const { seen, on } = recorder();
    const end = await followRun(client(), '/api/runs/~/p/t/r', on, { retryDelaysMs: [5], idleMs: 1000 });
    expect(end).to.deep.equal({ status: 'ready', modified_at: '2026-01-01T00:00:00.000Z' });
    expect(seen.entries).to.deep.equal([
      [0, 'first'],
      [1, 'second'],
    ]);
    expect(seen.reconnecting).to.deep.equal([['no data for 1 s', 5]]);
    expect(api.requests.map((r) => r.lastEventId)).to.deep.equal([undefined, '0']);
  });

  it('gives up on streams that open and then go silent, however long each stayed open', async () => {
    // Headers and a comment, then nothing, on every request: an API process that hangs after answering.
    api = await scriptedApi([(_req, res) => stream(res)]);
    const { seen, on } = recorder();
    const err = await followRun(client(), '/api/runs/~/p/t/r', on, { retryDelaysMs: [5, 5], idleMs: 300, workedMs: 100 }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Failure);
    expect(err).to.include({ code: 'stream_failed', message: 'gave up following the run after 3 attempts in a row: no data for 0.3 s' });
    expect(api.requests).to.have.length(3);
    expect(seen.reconnecting).to.have.length(2);
  });

  it('fails at once, asking nothing, without a session (a usage error, exit 2)', async () => {
    api = await scriptedApi([(_req, res) => stream(res, END)]);
    const err = await followRun(createClient({ origin: api.origin }), '/api/runs/~/p/t/r', recorder().on, { retryDelaysMs: [5] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(UsageError);
    expect(api.requests).to.have.length(0);
  });

  it('fails at once on a 200 that is not an event stream (another service at that origin)', async () => {
    api = await scriptedApi([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>portal</html>');
      },
    ]);
    const err = await followRun(client(), '/api/runs/~/p/t/r', recorder().on, { retryDelaysMs: [5, 5] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Failure);
    expect((err as Failure).code).to.equal('invalid_answer');
    expect(api.requests).to.have.length(1);
  });

  it('stops at once, with the API’s error, when the run is gone (404) while it follows', async () => {
    api = await scriptedApi([
      (_req, res) => {
        stream(res, entry(0, 'first'));
        res.end();
      },
      (_req, res) => {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'not_found', message: 'run "r" not found' } }));
      },
    ]);
    const { seen, on } = recorder();
    const err = await followRun(client(), '/api/runs/~/p/t/r', on, { retryDelaysMs: [5, 5, 5] }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Failure);
    expect(err).to.include({ code: 'not_found', message: 'run "r" not found', status: 404 });
    expect(seen.entries).to.deep.equal([[0, 'first']]);
    expect(api.requests).to.have.length(2);
    expect(api.requests[1]!.lastEventId).to.equal('0');
  });

  it('retries an API that answers 503, and follows once it answers', async () => {
    api = await scriptedApi([
      (_req, res) => {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'temporal_unavailable', message: 'Temporal did not answer in time' } }));
      },
      (_req, res) => {
        stream(res, entry(0, 'first'), END);
        res.end();
      },
    ]);
    const { seen, on } = recorder();
    expect((await followRun(client(), '/api/runs/~/p/t/r', on, { retryDelaysMs: [5] })).status).to.equal('ready');
    expect(seen.reconnecting).to.deep.equal([['Temporal did not answer in time', 5]]);
    expect(seen.entries).to.deep.equal([[0, 'first']]);
  });

  it('fails a request the API does not answer within the time limit', async () => {
    api = await scriptedApi([() => undefined]);
    const err = await createClient({ origin: api.origin, session: 'ptr/u/s', timeoutMs: 200 })
      .get('/api/users/~')
      .catch((e: unknown) => e);
    expect(err).to.be.instanceOf(Failure);
    expect(err).to.include({ code: 'timeout', message: 'GET /api/users/~: no answer within 0.2 s' });
  });

  it('passes the answer as it is written (delta events) to its handler, and the view prints its new parts', async () => {
    const delta = (data: object) => `event: delta\ndata: ${JSON.stringify(data)}\n\n`;
    api = await scriptedApi([(_req, res) => stream(res, delta({ text: 'Hel' }), delta({ text: 'Hello' }), delta({ reset: true }), entry(0, 'answered'), END)]);
    const views = [false, true].map((json) => {
      let written = '';
      const sink = { write: (chunk: string) => void (written += chunk), isTTY: false };
      const view = createRunView({ json, stdout: sink, stderr: sink } as unknown as Context, 'r1');
      return { view, out: () => written };
    });
    const seen: unknown[] = [];
    await followRun(client(), '/runs/r1', {
      entry: (id, e) => views.forEach(({ view }) => view.entry(id, e)),
      status: () => undefined,
      reconnecting: () => undefined,
      delta: (d) => {
        seen.push(d);
        views.forEach(({ view }) => view.delta(d));
      },
    });
    views.forEach(({ view }) => view.close());
    expect(seen).to.deep.equal([{ text: 'Hel' }, { text: 'Hello' }, { reset: true }]);
    const [plain, json] = views.map((v) => v.out());
    expect(plain!.startsWith('Hello\n'), plain).to.equal(true);
    expect(plain).to.include('answered');
    expect(json!.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((d) => d.event === 'delta')).to.deep.equal([
      { event: 'delta', text: 'Hel' },
      { event: 'delta', text: 'Hello' },
      { event: 'delta', reset: true },
    ]);
  });
});
