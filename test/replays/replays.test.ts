import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { anthropicText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { startCountingServer, type CountingServer } from '../servlets/counting-server';
import { runWorkflowId } from '../../src/contract/constants';
import { ptrAs } from '../helpers/ptr';
import { runDiffView } from '../../src/http/presenters/run-diff';
import { runView } from '../../src/http/presenters/run';

/**
 * The worker and API of these tests: servlets may fetch loopback (the counter below), no operator key for Anthropic
 * (a replay on it needs a key the task lacks), a task queue of their own.
 */
const SETTINGS = { NETWORK_ALLOWLIST: '127.0.0.1', OPENAI_API_KEY: 'sk-operator-openai-replays', ANTHROPIC_API_KEY: '', TEMPORAL_TASK_QUEUE: `replays-${crypto.randomBytes(4).toString('hex')}` };
let server: { readonly url: string };

const toolMessages = (req: RecordedRequest) => (req.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool');
const promptOf = (req: RecordedRequest) => String((req.body.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'user')?.content ?? '');

/**
 * The fake model of these tests, the same for every run: it fetches the counter's URL (named in the prompt) twice, one
 * (or the prompt's `times <n>`) call a turn with identical arguments, with the fetcher installed as `web` (or as the prompt's `via <install>`), and
 * when the prompt says "greet" also calls the greeter; then it answers with the results it heard, in order.
 */
function model(req: RecordedRequest) {
  const heard = toolMessages(req).map((m) => m.content);
  const prompt = promptOf(req);
  const url = /fetch (\S+)/.exec(prompt)?.[1] ?? '';
  const fetcher = `${/via (\w+)/.exec(prompt)?.[1] ?? 'web'}__fetch`;
  const times = Number(/times (\d+)/.exec(prompt)?.[1] ?? 2);
  const plan = [
    ...Array.from({ length: times }, () => ({ name: fetcher, arguments: { url } })),
    ...(prompt.includes('greet') ? [{ name: 'hello__greet', arguments: { name: 'Ann' } }] : []),
  ];
  const next = plan[heard.length];
  return next ? openaiToolCall([{ id: `call_${heard.length}`, ...next }]) : openaiText(`heard: ${heard.join(' | ')}`);
}

/** A user of this file's API with the fetcher (`web`) and the greeter (`hello`) installed, and task `t`. */
async function setUp(task = 't') {
  const { username, sessionId } = await signedIn('rep');
  const api = apiFor(sessionId, server.url);
  await installServlet(api, username, 'http-fetcher', 'web');
  await installServlet(api, username, 'greeter', 'hello');
  await createTask(api, 'default', task, { prompt: 'fetch {{ url }} {{ extra }}' });
  return { api, username, sessionId };
}

/** A closed run of task `task` named `run`, fetching `counter`. */
async function original(api: Api, counter: CountingServer, run = 'orig', task = 't') {
  const res = await postSigned(await signedUrl(api, 'default', task), { url: `${counter.url}/n` }, { 'run-id': run });
  expect(res.status, res.text).to.equal(201);
  const body = await waitForRun(api, res.body.url);
  expect(body.status, JSON.stringify(body.results)).to.equal('ready');
  return { url: res.body.url as string, path: new URL(res.body.url).pathname, body };
}

async function replay(api: Api, runPath: string, body: Record<string, unknown> = {}) {
  const res = await api.post(`${runPath}/replays`, body);
  expect(res.status, res.text).to.equal(201);
  const run = await waitForRun(api, res.body.url);
  return { url: res.body.url as string, path: new URL(res.body.url).pathname, run };
}

const answer = (run: { results: Array<{ lastMessage?: { content: string } }> }) => run.results.at(-1)?.lastMessage?.content;
const toolResults = (run: { results: Array<Record<string, any>> }) => run.results.filter((e) => e.exchange?.role === 'tool');

describe('replays: the same run again, its tools played back', function () {
  this.timeout(90_000);
  server = useOwnWorkerAndApi(SETTINGS);
  let counter: CountingServer;
  before(async () => {
    // A tool that answers differently each time: the n-th request hears "count n".
    counter = await startCountingServer('127.0.0.1', (_req, res) => res.end(`count ${counter.hits}`));
  });
  after(() => counter.close());
  beforeEach(() => getStack().fake.script(model));

  it('gives the original answers with recorded tools, the n-th identical call its n-th result, and never calls the tool', async () => {
    const { api, username } = await setUp();
    const first = await original(api, counter);
    const hits = counter.hits;
    expect(answer(first.body)).to.equal(`heard: 200 count ${hits - 1} | 200 count ${hits}`);
    expect(first.body, 'a run that is not a replay shows no replay fields').to.not.have.any.keys('replay_of', 'overrides', 'eval');

    const again = await replay(api, first.path, { tools: 'recorded' });
    expect(again.url).to.match(/\/orig\.r1$/);
    expect(again.run.status, JSON.stringify(again.run.results)).to.equal('ready');
    expect(answer(again.run)).to.equal(answer(first.body));
    expect(counter.hits, 'the tool was not called').to.equal(hits);
    expect(toolResults(again.run).map((e) => e.replayed)).to.deep.equal([true, true]);
    expect(again.run.replay_of).to.equal('orig');
    expect(again.run.overrides).to.deep.equal({});
    // Listed the same way, and its record is a lowest-priority run of the same task.
    const record = await getStack().db.models.Run.findById(runWorkflowId({ owner: username, profile: 'default', task: 't', run: 'orig.r1' })).lean();
    expect(record?.replay?.tools).to.equal('recorded');
    const second = await api.post(`${first.path}/replays`, { tools: 'recorded' });
    expect(second.status, second.text).to.equal(201);
    expect(second.body.url).to.match(/\/orig\.r2$/);
    await waitForRun(api, second.body.url);
  });

  it('calls every tool again with live tools', async () => {
    const { api } = await setUp();
    const first = await original(api, counter);
    const hits = counter.hits;
    const again = await replay(api, first.path, { tools: 'live', name: 'live-one' });
    expect(again.url).to.match(/\/live-one$/);
    expect(counter.hits, 'the tool ran twice more').to.equal(hits + 2);
    expect(answer(again.run)).to.equal(`heard: 200 count ${hits + 1} | 200 count ${hits + 2}`);
    expect(toolResults(again.run).some((e) => 'replayed' in e)).to.equal(false);
  });

  it('runs a call the original never made live under recorded_then_live, and refuses it under recorded', async () => {
    const { api } = await setUp();
    const first = await original(api, counter);
    const hits = counter.hits;
    const prompt = 'fetch {{ url }} and greet';
    const mixed = await replay(api, first.path, { prompt });
    expect(mixed.run.overrides).to.deep.equal({ prompt });
    expect(answer(mixed.run)).to.equal(`${answer(first.body)} | Hello, Ann!`);
    expect(toolResults(mixed.run).map((e) => e.replayed ?? false)).to.deep.equal([true, true, false]);
    const strict = await replay(api, first.path, { prompt, tools: 'recorded' });
    expect(answer(strict.run)).to.equal(`${answer(first.body)} | ERROR: no recorded result for this call`);
    expect(toolResults(strict.run).at(-1)!.msg).to.equal('tool result: hello__greet (error)');
    expect(counter.hits, 'the fetches were all played back').to.equal(hits);
  });

  it('answers the diff: the answers\' unified diff, the tool calls side by side, usage and duration', async () => {
    const { api } = await setUp();
    const first = await original(api, counter);
    const mixed = await replay(api, first.path, { prompt: 'fetch {{ url }} and greet' });
    const res = await api.get(`${mixed.path}/diff`);
    expect(res.status, res.text).to.equal(200);
    const diff = res.body;
    expect(diff.original).to.include({ name: 'orig', status: 'ready', answer: answer(first.body) });
    expect(diff.replay).to.include({ name: 'orig.r1', status: 'ready', answer: answer(mixed.run) });
    for (const side of [diff.original, diff.replay]) {
      expect(side.usage).to.have.all.keys('input_tokens', 'output_tokens', 'model_calls', 'tool_calls');
      expect(side.duration_ms).to.be.a('number').and.at.least(0);
    }
    expect(diff.answer_diff).to.include('--- orig').and.include('+++ orig.r1').and.include(`-${answer(first.body)}`).and.include(`+${answer(mixed.run)}`);
    const url = `${counter.url}/n`;
    expect(diff.tool_calls).to.deep.equal([
      { change: 'same', tool: 'web__fetch', original_arguments: { url }, replay_arguments: { url }, replayed: true },
      { change: 'same', tool: 'web__fetch', original_arguments: { url }, replay_arguments: { url }, replayed: true },
      { change: 'added', tool: 'hello__greet', replay_arguments: { name: 'Ann' }, replayed: false },
    ]);
    // The original's own diff: it is not a replay.
    expect(() => runDiffView.parse(diff), 'the diff fits its OpenAPI schema').to.not.throw();
    expect(() => runView.parse(mixed.run), 'the replay fits the run schema').to.not.throw();
    const notReplay = await api.get(`${first.path}/diff`);
    expect(notReplay.status).to.equal(404);
    expect(notReplay.body.error.code).to.equal('not_a_replay');
  });

  it('keeps a replay working when its original is deleted, and its diff then 404s', async () => {
    const { api, username } = await setUp();
    const first = await original(api, counter);
    const hits = counter.hits;
    const res = await api.post(`${first.path}/replays`, { tools: 'recorded' });
    expect(res.status, res.text).to.equal(201);
    expect((await api.delete(first.path)).status).to.equal(204);
    const run = await waitForRun(api, res.body.url);
    expect(answer(run)).to.equal(answer(first.body));
    expect(counter.hits).to.equal(hits);
    const diff = await api.get(`${new URL(res.body.url).pathname}/diff`);
    expect(diff.status, diff.text).to.equal(404);
    expect(diff.body.error.code).to.equal('not_found');
    // Deleting the replay deletes its recorded results.
    const replayId = runWorkflowId({ owner: username, profile: 'default', task: 't', run: run.name });
    expect(await getStack().db.models.ReplayTool.countDocuments({ run: replayId })).to.equal(2);
    expect((await api.delete(new URL(res.body.url).pathname)).status).to.equal(204);
    expect(await getStack().db.models.ReplayTool.countDocuments({ run: replayId })).to.equal(0);
  });

  it('refuses a live original (409 run_live), an unknown run (404), bad bodies (400 naming the field), a runner without a key (400 missing_key) and a live replay\'s diff (409 run_live)', async () => {
    const { api, username } = await setUp();
    const first = await original(api, counter);
    expect((await api.post('/api/runs/~/default/t/nope/replays', {})).status).to.equal(404);
    for (const [body, field] of [
      [{ tools: 'sometimes' }, 'tools'],
      [{ name: 'no spaces' }, 'name'],
      [{ task_version: 0 }, 'task_version'],
      [{ task_version: 9 }, 'task_version'],
      [{ runner: 'mystery' }, 'runner'],
      [{ runner: 'anthropic' }, 'model'],
      [{ prompt: '{{#open}}' }, 'prompt'],
    ] as const) {
      const res = await api.post(`${first.path}/replays`, body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).to.equal(400);
      expect(res.body.error.message, JSON.stringify(body)).to.match(new RegExp(`^${field}`));
    }
    const noKey = await api.post(`${first.path}/replays`, { runner: 'anthropic', model: 'claude-test' });
    expect(noKey.status, noKey.text).to.equal(400);
    expect(noKey.body.error.code).to.equal('missing_key');
    // A name the generated one would push past the run name limit.
    const long = 'x'.repeat(62);
    const longRun = await original(api, counter, long);
    const tooLong = await api.post(`${longRun.path}/replays`, {});
    expect(tooLong.status, tooLong.text).to.equal(400);
    expect(tooLong.body.error.message).to.match(/^name: /);
    // A live run: the fake model does not answer until reset.
    getStack().fake.script(() => ({ hang: true }));
    const live = await postSigned(await signedUrl(api, 'default', 't'), { url: `${counter.url}/n` }, { 'run-id': 'hanging' });
    const livePath = new URL(live.body.url).pathname;
    const refused = await api.post(`${livePath}/replays`, {});
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.error.code).to.equal('run_live');
    // A replay still live has no diff yet.
    const hung = await api.post(`${first.path}/replays`, {});
    expect(hung.status, hung.text).to.equal(201);
    const hungPath = new URL(hung.body.url).pathname;
    const early = await api.get(`${hungPath}/diff`);
    expect(early.status, early.text).to.equal(409);
    expect(early.body.error.code).to.equal('run_live');
    for (const path of [livePath, hungPath]) {
      await api.post(`${path}/cancel`);
      await until('the hanging run to end', async () => ['ready', 'error'].includes((await api.get(path)).body.status));
    }
    expect(username).to.be.a('string');
  });

  it('answers a replay named like an existing run with that run (200), and replays through Variant A\'s path too', async () => {
    const { api } = await setUp('default-task');
    const first = await original(api, counter, 'a1', 'default-task');
    const made = await api.post(`${first.path}/replays`, { name: 'again', tools: 'recorded' });
    expect(made.status, made.text).to.equal(201);
    const same = await api.post(`${first.path}/replays`, { name: 'again', tools: 'recorded' });
    expect(same.status, same.text).to.equal(200);
    expect(same.body.url).to.equal(made.body.url);
    await waitForRun(api, made.body.url);
    const viaA = await api.post('/api/profiles/~/default/tasks/default-task/runs/a1/replays', { tools: 'recorded' });
    expect(viaA.status, viaA.text).to.equal(201);
    expect(viaA.body.url).to.match(/\/api\/profiles\/[^/]+\/default\/tasks\/default-task\/runs\/a1\.r1$/);
    const run = await waitForRun(api, viaA.body.url);
    expect(run.replay_of).to.equal('a1');
  });

  it('answers a recorded call without asking for its approval, where the original waited for one', async () => {
    const { api, username } = await setUp();
    const gated = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/http-fetcher`, name: 'gated', settings: { approval: '*' } });
    expect(gated.status, gated.text).to.equal(201);
    await createTask(api, 'default', 'g', { prompt: 'fetch {{ url }} via gated' });
    const res = await postSigned(await signedUrl(api, 'default', 'g'), { url: `${counter.url}/n` }, { 'run-id': 'o' });
    const path = new URL(res.body.url).pathname;
    for (let i = 0; i < 2; i++) {
      const approval = await until('an approval', async () => {
        const run = (await api.get(path)).body;
        return run.status === 'pending' ? run.results.filter((e: any) => e.approval).at(i)?.approval : undefined;
      });
      expect((await api.post(`${path}/approvals/${approval.id}`, { approve: true })).status).to.equal(202);
    }
    const first = await waitForRun(api, res.body.url);
    expect(first.status, JSON.stringify(first.results)).to.equal('ready');
    const again = await replay(api, path, { tools: 'recorded' });
    expect(answer(again.run)).to.equal(answer(first));
    expect(again.run.results.filter((e: any) => e.approval)).to.deep.equal([]);
  });

  it('runs a replay on another runner with its model, on the operator\'s key for that runner', async () => {
    const { api } = await setUp();
    await createTask(api, 'default', 'c', { runner: 'anthropic', prompt: 'fetch {{ url }}', key: 'sk-ant-task-key-0123456789' });
    getStack().fake.script([anthropicText('from claude')]);
    const res = await postSigned(await signedUrl(api, 'default', 'c'), { url: 'x' }, { 'run-id': 'o' });
    const first = await waitForRun(api, res.body.url);
    expect(answer(first)).to.equal('from claude');
    getStack().fake.reset();
    getStack().fake.script([openaiText('from gpt')]);
    const again = await replay(api, new URL(res.body.url).pathname, { runner: 'openai', model: 'gpt-replay' });
    expect(answer(again.run)).to.equal('from gpt');
    expect(again.run.overrides).to.deep.equal({ runner: 'openai', model: 'gpt-replay' });
    const call = getStack().fake.requests.at(-1)!;
    expect(call.provider).to.equal('openai');
    expect(call.body.model).to.equal('gpt-replay');
    expect(call.headers.authorization).to.equal('Bearer sk-operator-openai-replays');
  });

  it('gives each identical call its own recorded result across a continue-as-new', async function () {
    this.timeout(120_000);
    const { api, username, sessionId } = await setUp();
    await createTask(api, 'default', 'long', { prompt: 'fetch {{ url }} times 10' });
    const res = await postSigned(await signedUrl(api, 'default', 'long'), { url: `${counter.url}/n` }, { 'run-id': 'o' });
    const first = await waitForRun(api, res.body.url, 60_000);
    expect(first.status, JSON.stringify(first.results.at(-1))).to.equal('ready');
    const hits = counter.hits;
    // Runs this API starts continue as new every 25 history events: several times in 10 turns.
    const short = await startApi({ ...SETTINGS, RUN_CONTINUE_AS_NEW_EVENTS: '25' });
    try {
      const made = await apiFor(sessionId, short.url).post(`${new URL(res.body.url).pathname}/replays`, { tools: 'recorded' });
      expect(made.status, made.text).to.equal(201);
      const again = await waitForRun(api, made.body.url, 60_000);
      expect(answer(again)).to.equal(answer(first));
      expect(counter.hits).to.equal(hits);
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'long', run: 'o.r1' });
      // Visibility lags a little behind the executions.
      await until('an execution that continued as new', async () => {
        for await (const w of getStack().temporal.workflow.list({ query: `WorkflowId = "${id}"` })) if (w.status.name === 'CONTINUED_AS_NEW') return true;
        return false;
      }, 10_000);
    } finally {
      await short.close();
    }
  });

  it('replays and diffs from the command line (ptr run replay, ptr run diff)', async () => {
    const { api, sessionId } = await setUp();
    const first = await original(api, counter);
    const made = await ptrAs(['run', 'replay', 't', 'orig', '--tools', 'recorded', '--prompt', 'fetch {{ url }} and greet'], sessionId, server.url);
    expect(made.code, made.stderr).to.equal(0);
    expect(made.stdout).to.match(/^started: replay orig\.r1 of orig, http:\/\/\S+\/orig\.r1/);
    await waitForRun(api, `${server.url}${first.path}.r1`);
    const diff = await ptrAs(['run', 'diff', 't', 'orig.r1'], sessionId, server.url);
    expect(diff.code, diff.stderr).to.equal(0);
    expect(diff.stdout).to.match(/^same\s+web__fetch\s+yes$/m).and.match(/^added\s+hello__greet$/m).and.include('+++ orig.r1');
    const bad = await ptrAs(['run', 'replay', 't', 'orig', '--tools', 'often'], sessionId, server.url);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.include('--tools');
  });
});
