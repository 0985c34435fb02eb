import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { openaiText, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { evalSummaryView, evalView } from '../../src/http/routes/evals/view';

/** The worker and API of these tests, on a task queue of their own. */
const SETTINGS = { OPENAI_API_KEY: 'sk-operator-openai-evals', TEMPORAL_TASK_QUEUE: `evals-${crypto.randomBytes(4).toString('hex')}` };
let server: { readonly url: string };

const promptOf = (req: RecordedRequest) => String((req.body.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'user')?.content ?? '');

/** The fake model: asked for JSON (the prompt starts "json"), it answers a JSON object; otherwise a sentence. */
function model(req: RecordedRequest) {
  const prompt = promptOf(req);
  const n = /city (\d+)/.exec(prompt)?.[1] ?? '0';
  return prompt.startsWith('json') ? openaiText(JSON.stringify({ city: 'Paris', n: Number(n) })) : openaiText(`The city ${n} is Paris.`);
}

async function setUp(task = 't') {
  const { username, sessionId } = await signedIn('ev');
  const api = apiFor(sessionId, server.url);
  await createTask(api, 'default', task, { prompt: 'city {{ n }}' });
  return { api, username };
}

/** `count` closed runs of task `task`, named r0, r1, … */
async function originals(api: Api, count: number, task = 't') {
  const url = await signedUrl(api, 'default', task);
  const urls = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await postSigned(url, { n: i }, { 'run-id': `r${i}` });
      expect(res.status, res.text).to.equal(201);
      return res.body.url as string;
    }),
  );
  for (const u of urls) expect((await waitForRun(api, u)).status).to.equal('ready');
}

async function waitForEval(api: Api, url: string, statuses = ['ready', 'error', 'cancelled'], timeoutMs = 60_000) {
  const path = new URL(url).pathname;
  return until(`eval ${path} to end`, async () => {
    const res = await api.get(path);
    expect(res.status, res.text).to.equal(200);
    return statuses.includes(res.body.status) ? res.body : undefined;
  }, timeoutMs);
}

const JSON_CHECK = { type: 'json_schema', schema: { type: 'object', required: ['city'], properties: { city: { const: 'Paris' } } } };

describe('evals: replays of a task\'s runs under variants, checked and scored', function () {
  this.timeout(120_000);
  server = useOwnWorkerAndApi(SETTINGS);
  beforeEach(() => getStack().fake.script(model));

  it('scores an eval of 10 runs by 2 variants with contains and json_schema checks', async () => {
    const { api } = await setUp();
    await originals(api, 10);
    const res = await api.post('/api/tasks/~/default/t/evals', {
      runs: { last: 10 },
      variants: [{ name: 'plain' }, { name: 'json', prompt: 'json city {{ n }}' }],
      tools: 'recorded',
      checks: [{ type: 'contains', value: 'paris', case_sensitive: false }, JSON_CHECK],
      concurrency: 4,
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.url).to.match(/\/api\/tasks\/[^/]+\/default\/t\/evals\/[a-z0-9]+$/);
    expect(res.body.runs).to.equal(10);
    const done = await waitForEval(api, res.body.url);
    expect(done.status, JSON.stringify(done)).to.equal('ready');
    // The answer is the shape the OpenAPI document gives.
    evalView.strict().parse(done);
    const [plain, json] = done.scorecard;
    expect(plain).to.deep.include({ name: 'plain', runs: { done: 10, total: 10 }, checks: { passed: 10, total: 20 } });
    expect(json).to.deep.include({ name: 'json', runs: { done: 10, total: 10 }, checks: { passed: 20, total: 20 } });
    expect(plain.tokens).to.be.above(0);
    expect(plain.p50_duration_ms).to.be.a('number');
    expect(plain.diffs).to.have.length(10);

    // Its runs are named <eval>.<variant>.<run>, carry replay_of and eval, and each has its diff.
    const first = json.diffs[0];
    expect(first.run).to.equal(`${done.id}.json.${first.run.split('.').at(-1)}`);
    const diff = await api.get(new URL(first.diff_url).pathname);
    expect(diff.status, diff.text).to.equal(200);
    expect(diff.body.replay.answer).to.match(/^\{"city":"Paris"/);
    const run = await api.get(new URL(first.diff_url).pathname.replace(/\/diff$/, ''));
    expect(run.body.replay_of).to.match(/^r\d$/);

    // The run list leaves the replays out when asked.
    const all = await api.get('/api/runs/~/default/t?limit=100');
    const originalsOnly = await api.get('/api/runs/~/default/t?limit=100&replays=false');
    expect(all.body).to.have.length(30);
    expect(originalsOnly.body.map((r: { name?: string; id?: string }) => r.name ?? r.id).sort()).to.have.length(10);

    // Listed, and deleted once ended (its replays stay).
    const list = await api.get('/api/tasks/~/default/t/evals');
    expect(list.body.map((e: { id: string }) => e.id)).to.deep.equal([done.id]);
    evalSummaryView.strict().parse(list.body[0]);
    expect((await api.delete(new URL(done.url).pathname)).status).to.equal(204);
    expect((await api.get(new URL(done.url).pathname)).status).to.equal(404);
    expect((await api.get('/api/runs/~/default/t?limit=100')).body).to.have.length(30);
  });

  it('answers 400 naming the field for a bad eval', async () => {
    const { api } = await setUp();
    await originals(api, 1);
    const path = '/api/tasks/~/default/t/evals';
    const bad = async (body: unknown, field: RegExp) => {
      const res = await api.post(path, body);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error.message).to.match(field);
    };
    const ok = { runs: { last: 1 }, variants: [{ name: 'a' }] };
    await bad({ ...ok, tools: 'live' }, /^tools/);
    await bad({ ...ok, runs: { last: 0 } }, /^runs/);
    await bad({ ...ok, runs: { last: 101 } }, /^runs/);
    await bad({ ...ok, variants: [] }, /^variants/);
    await bad({ ...ok, variants: [{ name: 'a' }, { name: 'a' }] }, /^variants/);
    await bad({ ...ok, variants: [{ name: 'a.b' }] }, /^variants\.0\.name/);
    await bad({ ...ok, concurrency: 17 }, /^concurrency/);
    await bad({ ...ok, checks: [{ type: 'regex', pattern: '(' }] }, /^checks\.0\.pattern/);
    await bad({ ...ok, checks: [{ type: 'nope' }] }, /^checks\.0/);
    await bad({ ...ok, runs: { names: ['nope'] } }, /^runs\.names\.0/);
    await bad({ ...ok, variants: [{ name: 'a', prompt: '{{ unclosed' }] }, /^variants\.0\.prompt/);
    // The replay's name <eval>.<variant>.<run> would pass the run name limit.
    const long = 'x'.repeat(60);
    const res = await postSigned(await signedUrl(api, 'default', 't'), { n: 1 }, { 'run-id': long });
    await waitForRun(api, res.body.url);
    await bad({ ...ok, runs: { names: [long] } }, /^runs\.names\.0: .*run name limit/);
    const replays = await api.get('/api/runs/~/default/t?replays=maybe');
    expect(replays.status, replays.text).to.equal(400);
    expect(replays.body.error.message).to.match(/^query\.replays/);
    expect((await api.get('/api/tasks/~/default/nope/evals')).status).to.equal(404);
    expect((await api.get(`${path}/zzzzzz`)).status).to.equal(404);
  });

  it('cancels an eval: it starts no more replays and ends cancelled', async () => {
    const { api } = await setUp();
    await originals(api, 6);
    // The replays' model calls wait, so the eval is still running when cancelled.
    getStack().fake.script(async (req) => {
      if (!promptOf(req).startsWith('json')) await new Promise((r) => setTimeout(r, 3_000));
      return model(req);
    });
    const res = await api.post('/api/tasks/~/default/t/evals', { runs: { last: 6 }, variants: [{ name: 'slow' }], concurrency: 1 });
    expect(res.status, res.text).to.equal(201);
    const path = new URL(res.body.url).pathname;
    await until('the eval to run', async () => (await api.get(path)).body.status === 'running');
    const cancel = await api.post(`${path}/cancel`);
    expect(cancel.status, cancel.text).to.equal(202);
    const done = await waitForEval(api, res.body.url);
    expect(done.status).to.equal('cancelled');
    expect(done.reason).to.match(/^cancelled by /);
    expect(done.scorecard[0].runs.done).to.be.below(6);
    expect((await api.post(`${path}/cancel`)).status).to.equal(409);
  });

  it('deletes the task\'s evals with it', async () => {
    const { api } = await setUp('gone');
    await originals(api, 2, 'gone');
    const res = await api.post('/api/tasks/~/default/gone/evals', { runs: { last: 2 }, variants: [{ name: 'a' }] });
    expect(res.status, res.text).to.equal(201);
    await waitForEval(api, res.body.url);
    expect((await api.delete('/api/tasks/~/default/gone')).status).to.equal(204);
    await createTask(api, 'default', 'gone', { prompt: 'city {{ n }}' });
    expect((await api.get('/api/tasks/~/default/gone/evals')).body).to.deep.equal([]);
    expect((await api.get(new URL(res.body.url).pathname)).status).to.equal(404);
  });
});

describe('evals: limits and access tokens', function () {
  this.timeout(120_000);
  // Two originals and an eval's two replays use this task's four triggers of the minute.
  const limited = useOwnWorkerAndApi({ ...SETTINGS, TEMPORAL_TASK_QUEUE: `${SETTINGS.TEMPORAL_TASK_QUEUE}-limits`, TRIGGER_LIMIT_PER_MINUTE: '4' });
  beforeEach(() => getStack().fake.script(model));

  /** A client that sends `Authorization: Bearer <token>` and nothing else. */
  const bearer = (token: string) => {
    const plain = apiFor(undefined, limited.url);
    const headers = { authorization: `Bearer ${token}` };
    return { get: (p: string) => plain.get(p, { headers }), post: (p: string, b?: unknown) => plain.post(p, b, { headers }), delete: (p: string) => plain.delete(p, { headers }) };
  };
  const token = async (api: Api, name: string, scopes: string[]) => {
    const res = await api.post('/api/tokens/~', { name, scopes });
    expect(res.status, res.text).to.equal(201);
    return bearer(res.body.token as string);
  };

  it("counts an eval's replays as triggers of the task, and lets tokens start, read, cancel and delete evals by scope", async () => {
    const { sessionId } = await signedIn('evl');
    const api = apiFor(sessionId, limited.url);
    await createTask(api, 'default', 't', { prompt: 'city {{ n }}' });
    const url = await signedUrl(api, 'default', 't');
    for (const n of [0, 1]) {
      const res = await postSigned(url, { n }, { 'run-id': `r${n}` });
      expect(res.status, res.text).to.equal(201);
      expect((await waitForRun(api, res.body.url)).status).to.equal('ready');
    }

    const reader = await token(api, 'reader', ['runs:read']);
    const denied = await reader.post('/api/profiles/~/default/tasks/t/evals', { runs: { last: 2 }, variants: [{ name: 'a' }] });
    expect(denied.status, denied.text).to.equal(403);
    expect(denied.body.error.message).to.match(/"runs:trigger"/);

    const starter = await token(api, 'starter', ['runs:trigger', 'runs:read']);
    const made = await starter.post('/api/profiles/~/default/tasks/t/evals', { runs: { last: 2 }, variants: [{ name: 'a' }], concurrency: 1 });
    expect(made.status, made.text).to.equal(201);
    const evalPath = `/api/tasks/~/default/t/evals/${made.body.id}`;
    const done = await until('the eval to end', async () => {
      const res = await reader.get(evalPath);
      expect(res.status, res.text).to.equal(200);
      return ['ready', 'error', 'cancelled'].includes(res.body.status) ? res.body : undefined;
    }, 60_000);
    expect(done.status, JSON.stringify(done)).to.equal('ready');
    expect(done.scorecard[0].runs).to.deep.equal({ done: 2, total: 2 });
    expect((await reader.get('/api/profiles/~/default/tasks/t/evals')).body.map((e: { id: string }) => e.id)).to.deep.equal([made.body.id]);

    // Two originals and two replays: the minute's fifth trigger of the task is refused.
    const fifth = await postSigned(url, { n: 2 }, { 'run-id': 'r2' });
    expect(fifth.status, fifth.text).to.equal(429);
    expect(fifth.body.error.code).to.equal('trigger_limit');

    expect((await starter.delete(evalPath)).status).to.equal(403);
    const control = await token(api, 'control', ['runs:control']);
    expect((await control.post(`${evalPath}/cancel`)).status).to.equal(409); // it has ended
    expect((await control.delete(evalPath)).status).to.equal(204);
    expect((await reader.get(evalPath)).status).to.equal(404);
  });
});
