/**
 * Records the histories the replay test (test/unit/workflow-replay.test.ts) replays: one run of each path through
 * `runTask` (and one of each workflow of its own: a webhook delivery, a schedule's action, an eval) on the real stack, written to test/fixtures/histories/<scenario>.history (the History
 * protobuf, binary), or `<scenario>.<date>.history` beside it when that is there (`<scenario>.<date>.<n>.history` for
 * a later recording the same day): the files recorded before are
 * kept, so runs of the old code still replay. Run it after a change to `workflows/` that is meant to change histories:
 *
 *   npm run record-histories
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { everythingServer } from '../helpers/mcp-everything';
import { lastUserText, openaiText, openaiToolCall, providerError } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { runWorkflowId, scheduledRunWorkflowId, taskScheduleId } from '../../src/temporal/ids';
import { webhookDeliveryWorkflowId } from '../../src/runs/announce';
import { evalWorkflowId } from '../../src/contract/messages';

const DIR = path.join(__dirname, '..', 'fixtures', 'histories');

/** Where a scenario's new history goes: never over a file recorded before (the replay test replays them all). */
function fixturePath(scenario: string): string {
  const first = path.join(DIR, `${scenario}.history`);
  if (!fs.existsSync(first)) return first;
  const dated = `${scenario}.${new Date().toISOString().slice(0, 10)}`;
  // A second recording the same day is numbered (`answer.2026-11-28.2.history`).
  for (let n = 1; ; n++) {
    const file = path.join(DIR, n === 1 ? `${dated}.history` : `${dated}.${n}.history`);
    if (!fs.existsSync(file)) return file;
  }
}

describe('recording workflow histories for the replay test', function () {
  this.timeout(120_000);
  let api: Api;
  let username: string;

  before(async () => {
    ({ api, username } = await signedIn());
    await installServlet(api, username, 'greeter', 'hello');
    await installServlet(api, username, 'greeter', 'gated');
    const gated = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'gated', settings: { approval: '*' } });
    expect(gated.status, gated.text).to.be.oneOf([200, 201]);
    await createTask(api, 'default', 'replay');
    const budget = await api.put('/api/tasks/~/default/budget', { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: 'sk-x' }, limits: { max_total_tokens: 10 } });
    expect(budget.status, budget.text).to.equal(201);
  });
  beforeEach(() => getStack().fake.reset());

  /** Triggers `task` as run `scenario`, lets `during` act on it, waits for its end and saves its history. */
  const record = async (scenario: string, task: string, during?: (path: string) => Promise<void>) => {
    const res = await postSigned(await signedUrl(api, 'default', task), { text: scenario }, { 'run-id': scenario });
    expect(res.status, res.text).to.equal(201);
    const runPath = new URL(res.body.url).pathname;
    await during?.(runPath);
    const run = await waitForRun(api, res.body.url, 60_000);
    const handle = getStack().temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task, run: scenario }));
    await handle.result().catch(() => undefined);
    fs.mkdirSync(DIR, { recursive: true });
    fs.writeFileSync(fixturePath(scenario), temporal.api.history.v1.History.encode(await handle.fetchHistory()).finish());
    return run;
  };
  const approval = (runPath: string, seen: number) =>
    until('an approval entry', async () => {
      const run = (await api.get(runPath)).body;
      const asked = run.results.filter((e: any) => e.approval);
      return run.status === 'pending' && asked.length > seen ? (asked.at(-1).approval.id as string) : undefined;
    });

  it('an answer', async () => {
    expect((await record('answer', 'replay')).status).to.equal('ready');
  });

  it('a tool call, then an answer', async () => {
    getStack().fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'A' } }], { input: 3, output: 2 }), openaiText('done')]);
    expect((await record('tools', 'replay')).status).to.equal('ready');
  });

  it('a provider error retried', async () => {
    getStack().fake.script([providerError('openai', 503, 'busy'), openaiText('after retry')]);
    expect((await record('retry', 'replay')).status).to.equal('ready');
  });

  it('tool calls approved and denied', async () => {
    getStack().fake.script([openaiToolCall([{ name: 'gated__greet', arguments: { name: 'A' } }]), openaiToolCall([{ name: 'gated__greet', arguments: { name: 'B' } }]), openaiText('done')]);
    const run = await record('approvals', 'replay', async (runPath) => {
      expect((await api.post(`${runPath}/approvals/${await approval(runPath, 0)}`, { approve: true })).status).to.equal(202);
      expect((await api.post(`${runPath}/approvals/${await approval(runPath, 1)}`, { approve: false, reason: 'no' })).status).to.equal(202);
    });
    expect(run.status).to.equal('ready');
  });

  it('a replay: a call answered from the recorded result, an unmatched one refused (recorded tools)', async () => {
    getStack().fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'A' } }]), openaiText('done')]);
    const original = await postSigned(await signedUrl(api, 'default', 'replay'), { text: 'original' }, { 'run-id': 'replayed-original' });
    expect((await waitForRun(api, original.body.url, 60_000)).status).to.equal('ready');
    getStack().fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'A' } }]), openaiToolCall([{ name: 'hello__greet', arguments: { name: 'B' } }]), openaiText('done')]);
    const made = await api.post(`${new URL(original.body.url).pathname}/replays`, { name: 'replayed', tools: 'recorded' });
    expect(made.status, made.text).to.equal(201);
    expect((await waitForRun(api, made.body.url, 60_000)).status).to.equal('ready');
    await save('replayed', runWorkflowId({ owner: username, profile: 'default', task: 'replay', run: 'replayed' }));
  });

  it('an eval: two runs replayed under one variant (recorded tools), scored', async () => {
    getStack().fake.script(() => openaiText('{"city":"Paris"}'));
    for (const name of ['evaled-a', 'evaled-b']) {
      const res = await postSigned(await signedUrl(api, 'default', 'replay'), { text: name }, { 'run-id': name });
      expect((await waitForRun(api, res.body.url, 60_000)).status).to.equal('ready');
    }
    const made = await api.post('/api/tasks/~/default/replay/evals', { runs: { names: ['evaled-a', 'evaled-b'] }, variants: [{ name: 'v' }], checks: [{ type: 'contains', value: 'Paris' }], concurrency: 1 });
    expect(made.status, made.text).to.equal(201);
    await save('eval', evalWorkflowId({ owner: username, profile: 'default', task: 'replay', id: made.body.id }));
  });

  it('a cancel while the provider is slow', async () => {
    getStack().fake.script(() => ({ hang: true }));
    const run = await record('cancel', 'replay', async (runPath) => {
      await until('the provider call', async () => getStack().fake.requests[0]);
      expect((await api.post(`${runPath}/cancel`)).status).to.equal(202);
    });
    expect(run.status).to.equal('error');
  });

  /** Saves a closed workflow's history as `<scenario>.history`. */
  const save = async (scenario: string, workflowId: string) => {
    const handle = getStack().temporal.workflow.getHandle(workflowId);
    await handle.result();
    fs.writeFileSync(fixturePath(scenario), temporal.api.history.v1.History.encode(await handle.fetchHistory()).finish());
  };

  it('a completion webhook whose destination the guard refuses (its own workflow)', async () => {
    const put = await api.put('/api/tasks/~/default/hooked', { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: 'sk-x' }, webhook: { url: 'http://10.1.2.3/hook' } });
    expect(put.status, put.text).to.equal(201);
    const res = await postSigned(await signedUrl(api, 'default', 'hooked'), {}, { 'run-id': 'w1' });
    await waitForRun(api, res.body.url, 60_000);
    const runId = runWorkflowId({ owner: username, profile: 'default', task: 'hooked', run: 'w1' });
    const record = await getStack().db.models.Run.findById(runId).lean();
    await save('webhook', webhookDeliveryWorkflowId(runId, record!.created_at.getTime()));
  });

  it('a schedule\'s action, which records the run and waits for it (its own workflow)', async () => {
    const put = await api.put('/api/tasks/~/default/replay/schedules/nightly', { every: '24h' });
    expect(put.status, put.text).to.equal(201);
    const ref = { owner: username, profile: 'default', task: 'replay', schedule: 'nightly' };
    await getStack().temporal.schedule.getHandle(taskScheduleId(ref)).trigger();
    const prefix = scheduledRunWorkflowId(ref);
    const action = await until('the action\'s workflow', async () => {
      for await (const w of getStack().temporal.workflow.list({ query: `WorkflowType = 'scheduledRun'` })) if (w.workflowId.startsWith(prefix)) return w.workflowId;
      return undefined;
    });
    await save('scheduled', action);
    expect((await api.request('DELETE', '/api/tasks/~/default/replay/schedules/nightly')).status).to.equal(204);
  });

  it('an MCP tool call and an MCP task (a worker and an API of their own, let through to loopback)', async function () {
    this.timeout(120_000);
    const settings = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `replay-mcp-${Date.now()}` };
    const worker = await getStack().startWorker(settings);
    const server = await startApi(settings);
    try {
      const { username: owner, sessionId } = await signedIn();
      const mcpApi = apiFor(sessionId, server.url);
      const installed = await mcpApi.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url } });
      expect(installed.status, installed.text).to.equal(201);
      await createTask(mcpApi, 'default', 'mcp');
      getStack().fake.script([
        openaiToolCall([{ name: 'ev__echo', arguments: { message: 'hi' } }]),
        openaiToolCall([{ name: 'ev__simulate-research-query', arguments: { topic: 'replays' } }]),
        openaiText('done'),
      ]);
      const res = await postSigned(await signedUrl(mcpApi, 'default', 'mcp'), { text: 'mcp' }, { 'run-id': 'mcp' });
      expect(res.status, res.text).to.equal(201);
      const run = await waitForRun(mcpApi, res.body.url, 60_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      await save('mcp', runWorkflowId({ owner, profile: 'default', task: 'mcp', run: 'mcp' }));
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  it('an MCP call whose server asks a person (answered) and one whose server asks the run\'s model (sampling)', async function () {
    this.timeout(120_000);
    const settings = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `replay-mcp-ask-${Date.now()}` };
    const worker = await getStack().startWorker(settings);
    const server = await startApi(settings);
    try {
      const { username: owner, sessionId } = await signedIn();
      const mcpApi = apiFor(sessionId, server.url);
      const installed = await mcpApi.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url }, settings: { sampling: true } });
      expect(installed.status, installed.text).to.equal(201);
      await createTask(mcpApi, 'default', 'mcp-ask');
      getStack().fake.script([
        openaiToolCall([{ name: 'ev__trigger-elicitation-request', arguments: {} }]),
        openaiToolCall([{ name: 'ev__trigger-sampling-request', arguments: { prompt: 'hi' } }]),
        openaiText('sampled', { input: 2, output: 3 }),
        openaiText('done'),
      ]);
      const res = await postSigned(await signedUrl(mcpApi, 'default', 'mcp-ask'), { text: 'mcp-ask' }, { 'run-id': 'mcp-ask' });
      expect(res.status, res.text).to.equal(201);
      const runPath = new URL(res.body.url).pathname;
      const id = await until('an input entry', async () => {
        const run = (await mcpApi.get(runPath)).body;
        return run.status === 'pending' ? (run.results.at(-1)?.input?.id as string | undefined) : undefined;
      });
      const answered = await mcpApi.post(`${runPath}/inputs/${id}`, { action: 'accept', content: { name: 'Ada' } });
      expect(answered.status, answered.text).to.equal(202);
      const run = await waitForRun(mcpApi, res.body.url, 60_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      await save('mcp-ask', runWorkflowId({ owner, profile: 'default', task: 'mcp-ask', run: 'mcp-ask' }));
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  it('a model call refused while its owner holds the cap of provider calls, made again after a wait (a worker of its own, cap 1)', async function () {
    this.timeout(120_000);
    const settings = { WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '1', TEMPORAL_TASK_QUEUE: `replay-owner-busy-${Date.now()}` };
    const worker = await getStack().startWorker(settings);
    const server = await startApi(settings);
    try {
      const { username: owner, sessionId } = await signedIn();
      const ownApi = apiFor(sessionId, server.url);
      await createTask(ownApi, 'default', 'busy');
      const held: Array<() => void> = [];
      getStack().fake.script(async (req) => {
        if (held.length === 0 && !lastUserText(req).includes('owner-busy')) await new Promise<void>((release) => held.push(release));
        return openaiText('done');
      });
      const url = await signedUrl(ownApi, 'default', 'busy');
      const first = await postSigned(url, { text: 'holder' }, { 'run-id': 'holder' });
      expect(first.status, first.text).to.equal(201);
      await until('the first run\'s call held at the provider', () => held.length === 1);
      const res = await postSigned(url, { text: 'owner-busy' }, { 'run-id': 'owner-busy' });
      expect(res.status, res.text).to.equal(201);
      // Its first call refused, then its next one: both paths of the wait are in its history.
      await until('two calls refused', async () => ((await worker.worker.metrics.getSingleMetric('ptr_provider_calls_owner_busy_total')?.get())?.values[0]?.value ?? 0) >= 2);
      held[0]!();
      for (const r of [first, res]) expect((await waitForRun(ownApi, r.body.url, 60_000)).status).to.equal('ready');
      await save('owner-busy', runWorkflowId({ owner, profile: 'default', task: 'busy', run: 'owner-busy' }));
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  it('a token budget passed', async () => {
    getStack().fake.script([openaiText('too long', { input: 8, output: 8 })]);
    expect((await record('budget', 'budget')).status).to.equal('error');
  });
});
