import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { anthropicText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { runWorkflowId } from '../../src/temporal/ids';

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');

/** Triggers `task` (Variant B, default profile) with a run name; returns the run's path. */
async function trigger(api: Api, task: string, run: string): Promise<string> {
  const res = await postSigned(await signedUrl(api, 'default', task), { text: 'x' }, { 'run-id': run });
  expect(res.status, res.text).to.equal(201);
  return new URL(res.body.url).pathname;
}

/** The run once it waits for a decision: its approval entry's id. */
async function pendingApproval(api: Api, path: string, seen: number): Promise<{ id: string; tool: string; arguments: unknown }> {
  return until('an approval entry', async () => {
    const run = (await api.get(path)).body;
    const asked = run.results.filter((e: any) => e.approval);
    return run.status === 'pending' && asked.length > seen ? asked.at(-1).approval : undefined;
  });
}

describe('runs: control (cancel, approvals, limits, usage)', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  describe('token usage', () => {
    it('counts the providers\' tokens, model calls and tool calls, live and in the record', async () => {
      const { api, username } = await signedIn();
      const { fake, db } = getStack();
      await installServlet(api, username, 'greeter', 'hello');
      await createTask(api, 'default', 'usage');
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      fake.script([
        openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }], { input: 10, output: 5 }),
        async () => {
          await released;
          return openaiText('done', { input: 20, output: 7 });
        },
      ]);
      const path = await trigger(api, 'usage', 'u1');
      // While the second model call waits: the first call and the tool call are counted already (from the query).
      const live = await until('the live usage', async () => {
        const res = await api.get(path);
        return res.body.usage?.model_calls === 1 && res.body.usage.tool_calls === 1 ? res : undefined;
      });
      expect(live.headers.get('run-source')).to.equal('live');
      expect(live.body.usage).to.deep.equal({ input_tokens: 10, output_tokens: 5, model_calls: 1, tool_calls: 1 });
      release();
      const run = await waitForRun(api, `http://x${path}`);
      expect(run.status).to.equal('ready');
      expect(run.usage).to.deep.equal({ input_tokens: 30, output_tokens: 12, model_calls: 2, tool_calls: 1 });
      const record = await db.models.Run.collection.findOne({ _id: runWorkflowId({ owner: username, profile: 'default', task: 'usage', run: 'u1' }) as never });
      expect(record?.usage).to.deep.equal({ input_tokens: 30, output_tokens: 12, model_calls: 2, tool_calls: 1 });
      const listed = (await api.get('/api/runs/~/default/usage')).body;
      expect((Array.isArray(listed) ? listed : listed.runs ?? listed.items)[0].usage.model_calls).to.equal(2);
    });

    it('counts Anthropic\'s prompt-cache tokens as input', async () => {
      const { api } = await signedIn();
      const { fake } = getStack();
      await createTask(api, 'default', 'cached', { runner: 'anthropic' });
      const reply = anthropicText('hi', { input: 3, output: 4 });
      Object.assign((reply.body as any).usage, { cache_creation_input_tokens: 100, cache_read_input_tokens: 50 });
      fake.script([reply]);
      const run = await waitForRun(api, `http://x${await trigger(api, 'cached', 'c1')}`);
      expect(run.usage).to.deep.equal({ input_tokens: 153, output_tokens: 4, model_calls: 1, tool_calls: 0 });
    });
  });

  describe('per-task limits', () => {
    it('shows a task\'s limits in its reads, and none for a task without them', async () => {
      const { api } = await signedIn();
      const put = await api.put('/api/tasks/~/default/limited', { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: 'sk-x' }, limits: { max_turns: 3, timeout_s: 60, max_total_tokens: 5000 } });
      expect(put.status, put.text).to.equal(201);
      expect(put.body.limits).to.deep.equal({ max_turns: 3, timeout_s: 60, max_total_tokens: 5000 });
      expect((await api.get('/api/tasks/~/default/limited')).body.limits).to.deep.equal({ max_turns: 3, timeout_s: 60, max_total_tokens: 5000 });
      const short = await api.put('/api/tasks/~/default/short', { provider: 'openai', prompt: 'p', settings: { key: 'sk-x' }, limits: { max_turns: 2 } });
      expect(short.status, short.text).to.equal(201);
      expect(short.body.limits).to.deep.equal({ max_turns: 2 });
      const plain = await createTask(api, 'default', 'plain');
      expect(plain).to.not.have.property('limits');
      // A save without limits drops them (a PUT replaces the task).
      const again = await api.put('/api/tasks/~/default/limited', { runner: 'openai', openai: { prompt: 'p', model: 'm' } });
      expect(again.status, again.text).to.equal(200);
      expect(again.body).to.not.have.property('limits');
    });

    it('answers 400 naming the field for a limit over the server\'s ceiling or of the wrong shape', async () => {
      const { api } = await signedIn();
      const { config } = getStack();
      const body = (limits: unknown) => ({ runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: 'sk-x' }, limits });
      const cases: Array<[unknown, RegExp]> = [
        [{ max_turns: config.RUN_MAX_TURNS + 1 }, /^limits\.max_turns: .*RUN_MAX_TURNS/],
        [{ timeout_s: Math.floor(config.RUN_TIMEOUT_MS / 1000) + 1 }, /^limits\.timeout_s: .*RUN_TIMEOUT_MS/],
        [{ max_turns: 0 }, /^limits\.max_turns: /],
        [{ max_total_tokens: 1.5 }, /^limits\.max_total_tokens: /],
        [{ max_turns: '3' }, /^limits\.max_turns: /],
        [{ turns: 3 }, /^limits: .*turns/],
        ['many', /^limits: /],
      ];
      for (const [limits, message] of cases) {
        const res = await api.put('/api/tasks/~/default/bad-limits', body(limits));
        expect(res.status, JSON.stringify(limits)).to.equal(400);
        expect(res.body.error.message, JSON.stringify(limits)).to.match(message);
      }
    });

    it('ends a run at the task\'s own turn limit, time limit and token budget', async () => {
      const { api, username } = await signedIn();
      const { fake } = getStack();
      await installServlet(api, username, 'greeter', 'hello');
      const task = (name: string, limits: Record<string, number>) =>
        api.put(`/api/tasks/~/default/${name}`, { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: 'sk-x' }, limits });
      expect((await task('one-turn', { max_turns: 1 })).status).to.equal(201);
      expect((await task('short-time', { timeout_s: 2 })).status).to.equal(201);
      expect((await task('budget', { max_total_tokens: 100 })).status).to.equal(201);

      fake.script(() => openaiToolCall([{ name: 'hello__greet', arguments: { name: 'x' } }]));
      const turns = await waitForRun(api, `http://x${await trigger(api, 'one-turn', 't1')}`);
      expect(turns.results.at(-1).error).to.match(/turn limit of 1 model call/);

      fake.reset();
      fake.script(() => ({ hang: true }));
      const timed = await waitForRun(api, `http://x${await trigger(api, 'short-time', 't1')}`);
      expect(timed.results.at(-1).error).to.equal('the run exceeded its time limit of 2 s');

      fake.reset();
      fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'x' } }], { input: 60, output: 30 }), openaiText('over', { input: 15, output: 5 })]);
      const budget = await waitForRun(api, `http://x${await trigger(api, 'budget', 't1')}`);
      expect(budget.status).to.equal('error');
      expect(budget.results.at(-1).error).to.match(/^token budget of 100 exceeded/);
      expect(budget.usage).to.include({ input_tokens: 75, output_tokens: 35, model_calls: 2 });

      fake.reset();
      fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'x' } }], { input: 40, output: 10 }), openaiText('within', { input: 40, output: 10 })]);
      const within = await waitForRun(api, `http://x${await trigger(api, 'budget', 't2')}`);
      expect(within.status).to.equal('ready');
      expect(within.results.at(-1).lastMessage.content).to.equal('within');
      expect(within.usage).to.include({ input_tokens: 80, output_tokens: 20, model_calls: 2 });
    });
  });

  describe('cancel', () => {
    it('stops a run waiting on a slow provider: the request is aborted and the run ends "cancelled by <user>"', async function () {
      this.timeout(60_000);
      const { sessionId, username } = await signedIn();
      const { fake, startWorker } = getStack();
      // Runs started with a heartbeat timeout of 10 min (the start sets it): the call heartbeats every 200 s, and only a
      // heartbeat would bring it Temporal's own cancel. Within the test only the workflow's abortRunCalls can stop it.
      const queue = `cancel-${crypto.randomBytes(4).toString('hex')}`;
      const worker = await startWorker({ TEMPORAL_TASK_QUEUE: queue });
      const server = await startApi({ TEMPORAL_TASK_QUEUE: queue, PROVIDER_HEARTBEAT_TIMEOUT_MS: '600000' });
      try {
        const api = apiFor(sessionId, server.url);
        await createTask(api, 'default', 'slow');
        fake.script(() => ({ hang: true }));
        const path = await trigger(api, 'slow', 'c1');
        const request = await until('the provider call', () => fake.requests[0]);
        const res = await api.post(`${path}/cancel`);
        expect(res.status, res.text).to.equal(202);
        expect(res.body).to.deep.equal({ url: `${server.url}${path}` });
        // Again while it closes (or once closed): 202, or 409 once the record says it ended.
        expect((await api.post(`${path}/cancel`)).status).to.be.oneOf([202, 409]);
        const run = await waitForRun(api, `http://x${path}`);
        expect(run.status).to.equal('error');
        expect(run.results.at(-1).error).to.equal(`cancelled by ${username}`);
        // The workflow stops the call before it records the end: the request is aborted by now, or very nearly.
        await until('the aborted provider request', () => request.abortedAt, 20_000);
        // A call aborted by the cancel is no provider failure: no provider failure of the run at warn or worse.
        const workflowId = runWorkflowId({ owner: username, profile: 'default', task: 'slow', run: 'c1' });
        const warnings = getStack().logs.lines.filter((l) => l.includes(workflowId) && l.includes('Provider') && JSON.parse(l).level >= 40);
        expect(warnings, warnings.join('\n')).to.deep.equal([]);
        const closed = await api.post(`${path}/cancel`);
        expect(closed.status).to.equal(409);
        expect(closed.body.error.code).to.equal('run_closed');
      } finally {
        await server.close();
        await worker.stop();
      }
    });

    it('stops a servlet call in flight', async () => {
      const { api, username } = await signedIn();
      const { fake, logs } = getStack();
      await installServlet(api, username, 'infinite-loop', 'spin');
      await createTask(api, 'default', 'spinning');
      fake.script([(req) => openaiToolCall([{ id: 'c1', name: req.body.tools.find((t: any) => t.function.name.startsWith('spin__spin')).function.name, arguments: {} }])]);
      const path = await trigger(api, 'spinning', 'c1');
      await until('the tool call', async () => ((await api.get(path)).body.results.some((e: any) => e.msg?.startsWith('tool call: spin__')) ? true : undefined));
      expect((await api.post(`${path}/cancel`)).status).to.equal(202);
      const run = await waitForRun(api, `http://x${path}`);
      expect(run.results.at(-1).error, JSON.stringify(run.results)).to.equal(`cancelled by ${username}`);
      await until('the stopped servlet call in the log', () => (logs.text().includes('servlet call cancelled') ? true : undefined));
    });

    it('answers 404 for an unknown run and 400 for a bad name, on both variants', async () => {
      const { api } = await signedIn();
      await createTask(api, 'default', 'exists');
      expect((await api.post('/api/runs/~/default/exists/nope/cancel')).status).to.equal(404);
      expect((await api.post('/api/profiles/~/default/tasks/exists/runs/nope/cancel')).status).to.equal(404);
      const bad = await api.post('/api/runs/~/default/exists/bad%20name/cancel');
      expect(bad.status).to.equal(400);
      expect(bad.body.error.message).to.match(/^path\.run: /);
    });

    it('cancels through the Variant A path too', async () => {
      const { api, username } = await signedIn();
      const { fake } = getStack();
      const put = await api.put('/api/profiles/~/default/tasks/slow-a', { runner: 'openai', openai: { prompt: 'p', model: getStack().config.VARIANT_A_MODEL }, settings: { key: 'sk-x' } });
      expect(put.status, put.text).to.equal(201);
      fake.script(() => ({ hang: true }));
      const started = await api.put('/api/profiles/~/default/tasks/slow-a/runs/a1', { parameters: {} });
      expect(started.status, started.text).to.equal(201);
      await until('the provider call', () => fake.requests[0]);
      const res = await api.post('/api/profiles/~/default/tasks/slow-a/runs/a1/cancel');
      expect(res.status, res.text).to.equal(202);
      expect(res.body.url).to.equal(started.body.url);
      const run = await waitForRun(api, started.body.url);
      expect(run.results.at(-1).error).to.equal(`cancelled by ${username}`);
    });
  });

  describe('tool approvals', () => {
    it('waits pending for a decision: an approved call runs, a denied one gives the model "denied: <reason>"', async () => {
      const { api, username } = await signedIn();
      const { fake } = getStack();
      await installServlet(api, username, 'greeter', 'hello');
      const reinstall = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
      expect(reinstall.status, reinstall.text).to.equal(200);
      await createTask(api, 'default', 'approve');
      fake.script([
        openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]),
        openaiToolCall([{ id: 'c2', name: 'hello__greet', arguments: { name: 'Bob' } }]),
        (req) => openaiText(`results: ${toolMessages(req).map((m) => m.content).join(' | ')}`),
      ]);
      const path = await trigger(api, 'approve', 'a1');

      const first = await pendingApproval(api, path, 0);
      expect(first).to.deep.include({ tool: 'hello__greet', arguments: { name: 'Ann' } });
      const pendingRun = (await api.get(path)).body;
      expect(pendingRun.results.at(-1)).to.deep.equal({ msg: 'approval needed: hello__greet', approval: first });
      const bad = await api.post(`${path}/approvals/${first.id}`, { approve: 'yes' });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.message).to.match(/^approve: /);
      expect((await api.post(`${path}/approvals/no-such-id`, { approve: true })).status).to.equal(404);
      const ok = await api.post(`${path}/approvals/${first.id}`, { approve: true });
      expect(ok.status, ok.text).to.equal(202);
      expect(ok.body.url).to.equal(`${getStack().config.PUBLIC_URL}${path}`);
      const again = await api.post(`${path}/approvals/${first.id}`, { approve: false });
      expect(again.status).to.equal(409);
      expect(again.body.error.code).to.equal('approval_decided');

      const second = await pendingApproval(api, path, 1);
      expect(second.arguments).to.deep.equal({ name: 'Bob' });
      expect((await api.post(`/api/profiles/~/default/tasks/approve/runs/a1/approvals/${second.id}`, { approve: false, reason: 'not Bob' })).status).to.equal(202);

      const run = await waitForRun(api, `http://x${path}`);
      expect(run.status).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.equal('results: Hello, Ann! | ERROR: denied: not Bob');
      const msgs = run.results.map((e: any) => e.msg);
      expect(msgs).to.include(`approved by ${username}: hello__greet`);
      expect(msgs).to.include(`denied by ${username}: hello__greet: not Bob`);
      expect(run.usage.tool_calls).to.equal(1);
      const closed = await api.post(`${path}/approvals/${second.id}`, { approve: true });
      expect(closed.status).to.equal(409);
      expect(closed.body.error.code).to.equal('run_closed');
    });

    it('asks nothing for tools the installation does not name', async () => {
      const { api, username } = await signedIn();
      const { fake } = getStack();
      // infinite-loop has two tools, spin and ping: only spin needs approval.
      await installServlet(api, username, 'infinite-loop', 'loop');
      const gated = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/infinite-loop`, name: 'loop', settings: { approval: ['spin'] } });
      expect(gated.status, gated.text).to.equal(200);
      await createTask(api, 'default', 'free');
      fake.script([openaiToolCall([{ name: 'loop__ping', arguments: {} }]), (req) => openaiText(toolMessages(req)[0].content)]);
      const run = await waitForRun(api, `http://x${await trigger(api, 'free', 'f1')}`);
      expect(run.status).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.equal('pong');
      expect(run.results.some((e: any) => e.approval)).to.equal(false);
      expect(fake.requests[0]!.body.tools.map((t: any) => t.function.name).sort()).to.deep.equal(['loop__ping', 'loop__spin']);
    });

    it('ends a run cancelled while it waits for approval', async () => {
      const { api, username } = await signedIn();
      const { fake } = getStack();
      await installServlet(api, username, 'greeter', 'gated');
      expect((await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'gated', settings: { approval: '*' } })).status).to.equal(200);
      await createTask(api, 'default', 'gated');
      fake.script([openaiToolCall([{ name: 'gated__greet', arguments: { name: 'D' } }])]);
      const path = await trigger(api, 'gated', 'g1');
      await pendingApproval(api, path, 0);
      expect((await api.post(`${path}/cancel`)).status).to.equal(202);
      const run = await waitForRun(api, `http://x${path}`);
      expect(run.results.at(-1).error).to.equal(`cancelled by ${username}`);
    });
  });
});
