import { expect } from 'chai';
import crypto from 'node:crypto';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { anthropicText, anthropicToolUse, lastUserText, openaiText, openaiToolCall, providerError, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, historyText, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { everythingServer } from '../helpers/mcp-everything';
import { runWorkflowId } from '../../src/temporal/ids';

/**
 * Sampling (docs/mcp.md, "Sampling"): server-everything's `trigger-sampling-request` asks the client for a model's
 * answer during the call. A run answers it with the task's own provider, model and key when the install's
 * `settings.sampling` is true, counts it in the run's usage and token budget, and refuses it otherwise.
 */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `mcp-sampling-${crypto.randomBytes(4).toString('hex')}` };
const KEY = 'sk-test-key-0123456789abcdef';
const TOOL = 'ev__trigger-sampling-request';
const SERVER_SYSTEM_PROMPT = 'You are a helpful test server.';
let server: ReturnType<typeof useOwnWorkerAndApi>;

/** The worker's `ptr_provider_tokens_total` for the fake's model, by kind. */
async function tokensCounted(): Promise<{ input: number; output: number }> {
  const metric = await server.worker.worker.metrics.getSingleMetric('ptr_provider_tokens_total')!.get();
  const of = (kind: string) => metric.values.find((v) => v.labels.runner === 'openai' && v.labels.model === 'test-model' && v.labels.kind === kind)?.value ?? 0;
  return { input: of('input'), output: of('output') };
}

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');
const msgs = (run: { results: Array<{ msg: string }> }) => run.results.map((e) => e.msg);

async function user() {
  const { username, sessionId } = await signedIn('smp');
  return { username, api: apiFor(sessionId, server.url) };
}

/** Installs server-everything as `ev` through the API, with `settings`. */
async function installEverything(api: Api, settings: Record<string, unknown> = {}) {
  const res = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url }, settings: { approval: 'none', ...settings } });
  expect(res.status, res.text).to.be.oneOf([200, 201]);
  return res.body;
}

/** Triggers the task: the run's URL. */
async function trigger(api: Api, task: string): Promise<string> {
  const res = await postSigned(await signedUrl(api, 'default', task), { text: 'x' });
  expect(res.status, res.text).to.equal(201);
  return res.body.url as string;
}

/** The workflow id of the run at `url`, to read its history. */
const workflowOf = (username: string, task: string, url: string) => runWorkflowId({ owner: username, profile: 'default', task, run: url.split('/').at(-1)! });

describe('runs: MCP sampling with the run\'s model', function () {
  this.timeout(60_000);
  server = useOwnWorkerAndApi(SETTINGS);

  it('answers 400 naming settings.sampling when it is not a boolean, and shows the setting in the install', async () => {
    const { api } = await user();
    const url = (await everythingServer()).url;
    for (const sampling of ['yes', 1, {}]) {
      const res = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url }, settings: { sampling } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_request');
      expect(res.body.error.message).to.match(/^settings\.sampling: expected boolean/);
    }
    expect((await installEverything(api)).settings.sampling).to.equal(false);
    expect((await installEverything(api, { sampling: true })).settings.sampling).to.equal(true);
    const listed = await api.get('/api/profiles/~/default/installations');
    expect(listed.body.installs.find((i: { name: string }) => i.name === 'ev').settings.sampling).to.equal(true);
  });

  it('answers the server with the OpenAI task\'s model and key, hands the model the tool\'s result and counts the sampling in the run\'s usage', async () => {
    const { api, username } = await user();
    const { fake, temporal, logs } = getStack();
    await installEverything(api, { sampling: true });
    await createTask(api, 'default', 'sample', { key: KEY });
    fake.script([
      openaiToolCall([{ id: 'call_1', name: TOOL, arguments: { prompt: 'name a colour', maxTokens: 50 } }], { input: 10, output: 5 }),
      openaiText('teal, said the fake', { input: 7, output: 3 }),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`, { input: 20, output: 4 }),
    ]);
    const before = await tokensCounted();
    const url = await trigger(api, 'sample');
    const run = await waitForRun(api, url);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    const after = await tokensCounted();
    expect({ input: after.input - before.input, output: after.output - before.output }, 'the worker\'s token metric counts the sampling as a model call').to.deep.equal({ input: 37, output: 12 });
    const sampling = fake.requests[1]!;
    expect(sampling.headers.authorization).to.equal(`Bearer ${KEY}`);
    expect(sampling.body.model).to.equal('test-model');
    expect(sampling.body.messages).to.deep.equal([
      { role: 'system', content: SERVER_SYSTEM_PROMPT },
      { role: 'user', content: 'Resource trigger-sampling-request context: name a colour' },
    ]);
    expect(sampling.body).to.include({ max_completion_tokens: 50, temperature: 0.7 });
    expect(sampling.body).to.not.have.property('tools');
    expect(run.results.at(-1).lastMessage.content).to.include('teal, said the fake').and.include('endTurn');
    expect(run.usage).to.deep.equal({ input_tokens: 37, output_tokens: 12, model_calls: 3, tool_calls: 1 });
    expect(msgs(run)).to.include(`${TOOL}: sampling: the run's model answered (7 input and 3 output tokens)`);
    const history = await historyText(temporal, workflowOf(username, 'sample', url));
    expect(history).to.contain('teal, said the fake'); // readable: the check below means something
    expect(history).not.to.contain(KEY);
    expect(logs.text()).not.to.contain(KEY);
  });

  it('answers the server with the Anthropic task\'s model, its system prompt, and max tokens capped by the task\'s own', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api, { sampling: true });
    const put = await api.put('/api/tasks/~/default/claude', { runner: 'anthropic', anthropic: { prompt: 'p', model: 'claude-test', max_tokens: 30 }, settings: { key: KEY } });
    expect(put.status, put.text).to.equal(201);
    fake.script([
      anthropicToolUse([{ id: 'toolu_1', name: TOOL, input: { prompt: 'say hi', maxTokens: 100 } }]),
      anthropicText('claude says hi', { input: 4, output: 6 }),
      (req) => anthropicText(`final: ${lastUserText(req)}`),
    ]);
    const run = await waitForRun(api, await trigger(api, 'claude'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    const sampling = fake.requests[1]!;
    expect(sampling.provider).to.equal('anthropic');
    // The current Anthropic SDK sends the key as `Authorization: Bearer`, older ones as `x-api-key`.
    expect(sampling.headers['x-api-key'] ?? String(sampling.headers.authorization).replace(/^Bearer /, '')).to.equal(KEY);
    expect(sampling.body).to.deep.include({ model: 'claude-test', max_tokens: 30, system: SERVER_SYSTEM_PROMPT, temperature: 0.7 });
    expect(sampling.body.messages).to.deep.equal([{ role: 'user', content: 'Resource trigger-sampling-request context: say hi' }]);
    expect(run.results.at(-1).lastMessage.content).to.include('claude says hi');
    expect(run.usage).to.deep.equal({ input_tokens: 6, output_tokens: 8, model_calls: 3, tool_calls: 1 });
  });

  it('refuses the server\'s sampling when the install does not allow it: the model reads why, and the provider is not asked', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api);
    await createTask(api, 'default', 'off');
    fake.script([openaiToolCall([{ id: 'call_1', name: TOOL, arguments: { prompt: 'say hi' } }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const run = await waitForRun(api, await trigger(api, 'off'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(fake.requests).to.have.length(2);
    expect(toolMessages(fake.requests[1]!)[0].content).to.include('sampling is off for this install: set settings.sampling to true');
    expect(msgs(run)).to.include(`tool result: ${TOOL} (error)`);
    expect(msgs(run)).to.include(`${TOOL}: sampling not answered: sampling is off for this install: set settings.sampling to true`);
    expect(run.usage).to.include({ model_calls: 2 });
  });

  it('ends the run in error with the budget reason when sampling takes it past max_total_tokens', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api, { sampling: true });
    const put = await api.put('/api/tasks/~/default/budget', { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: KEY }, limits: { max_total_tokens: 50 } });
    expect(put.status, put.text).to.equal(201);
    fake.script([openaiToolCall([{ name: TOOL, arguments: { prompt: 'write at length' } }], { input: 10, output: 5 }), openaiText('a long answer', { input: 30, output: 20 })]);
    const run = await waitForRun(api, await trigger(api, 'budget'));
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.equal('token budget of 50 exceeded (the run used 65 tokens)');
    expect(fake.requests).to.have.length(2);
    expect(run.usage).to.deep.equal({ input_tokens: 40, output_tokens: 25, model_calls: 2, tool_calls: 1 });
  });

  it('refuses sampling once the run\'s token budget is spent, without failing the run', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api, { sampling: true });
    const put = await api.put('/api/tasks/~/default/spent', { runner: 'openai', openai: { prompt: 'p', model: 'm' }, settings: { key: KEY }, limits: { max_total_tokens: 15 } });
    expect(put.status, put.text).to.equal(201);
    fake.script([
      openaiToolCall([{ name: TOOL, arguments: { prompt: 'more' } }], { input: 10, output: 5 }),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`, { input: 0, output: 0 }),
    ]);
    const run = await waitForRun(api, await trigger(api, 'spent'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(fake.requests).to.have.length(2);
    expect(toolMessages(fake.requests[1]!)[0].content).to.include("the run's token budget of 15 is spent (it used 15 tokens)");
  });

  it('gives the server the provider\'s refusal as an MCP error, its key removed, and the run goes on', async () => {
    const { api, username } = await user();
    const { fake, temporal } = getStack();
    await installEverything(api, { sampling: true });
    await createTask(api, 'default', 'broken', { key: KEY });
    fake.script([
      openaiToolCall([{ id: 'call_1', name: TOOL, arguments: { prompt: 'say hi' } }]),
      providerError('openai', 401, `the key ${KEY} is not valid here`),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`),
    ]);
    const url = await trigger(api, 'broken');
    const run = await waitForRun(api, url);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(fake.requests, 'a refusal is not tried again').to.have.length(3);
    const heard = toolMessages(fake.requests[2]!)[0].content as string;
    expect(heard).to.include("the run's model could not answer: openai answered 401: the key [redacted] is not valid here");
    expect(heard).not.to.include(KEY);
    expect(JSON.stringify(run)).not.to.include(KEY);
    expect(await historyText(temporal, workflowOf(username, 'broken', url))).not.to.include(KEY);
    expect(run.usage).to.include({ model_calls: 2 });
  });

  it('tries the sampling call again after a provider\'s 429 or 5xx, and answers the server with the model\'s answer', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api, { sampling: true });
    await createTask(api, 'default', 'busy', { key: KEY });
    fake.script([
      openaiToolCall([{ id: 'call_1', name: TOOL, arguments: { prompt: 'name a colour' } }]),
      providerError('openai', 429, 'slow down'),
      providerError('openai', 503, 'overloaded'),
      openaiText('amber, said the fake', { input: 7, output: 3 }),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`),
    ]);
    const run = await waitForRun(api, await trigger(api, 'busy'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(fake.requests).to.have.length(5);
    expect(toolMessages(fake.requests[4]!)[0].content).to.include('amber, said the fake');
    // The failed attempts cost nothing: one sampling call, counted once.
    expect(run.usage).to.include({ model_calls: 3 });
  });

  it('gives the server the provider\'s failure after three attempts at a sampling call', async () => {
    const { api } = await user();
    const { fake } = getStack();
    await installEverything(api, { sampling: true });
    await createTask(api, 'default', 'down', { key: KEY });
    fake.script([
      openaiToolCall([{ id: 'call_1', name: TOOL, arguments: { prompt: 'say hi' } }]),
      providerError('openai', 500, 'upstream broke'),
      providerError('openai', 502, 'upstream broke'),
      providerError('openai', 503, 'upstream broke'),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`),
    ]);
    const run = await waitForRun(api, await trigger(api, 'down'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(fake.requests).to.have.length(5);
    expect(toolMessages(fake.requests[4]!)[0].content).to.include("the run's model could not answer: openai answered 503: upstream broke (gave up after 3 attempts)");
    expect(run.usage).to.include({ model_calls: 2 });
  });
});
