import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { api as apiFor, signedIn, startApi, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { everythingServer } from '../helpers/mcp-everything';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { ptrAs } from '../helpers/ptr';

const ASK = 'ev__trigger-elicitation-request';
const ASK_URL = 'ev__trigger-url-elicitation';
const toolText = (req: RecordedRequest) => String((req.body.messages as any[]).find((m) => m.role === 'tool')?.content ?? '');
const msgs = (run: { results: Array<{ msg: string }> }) => run.results.map((e) => e.msg);

/**
 * The worker and API of these tests: loopback MCP servers allowed (MCP_ALLOWLIST), a queue of their own, and a call
 * time-out shorter than the people here take to answer (it pauses while they are asked).
 */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', MCP_CALL_TIMEOUT_MS: '1000', TEMPORAL_TASK_QUEUE: `mcp-inputs-${crypto.randomBytes(4).toString('hex')}` };

/**
 * Questions an MCP server asks during a run's tool call (`elicitation/create`, docs/mcp.md "Inputs"), against the
 * real server-everything: the run waits `pending` with the question as its last entry, a person answers through the
 * API, the server gets the answer and the model the tool's result.
 */
describe('runs: an MCP server asks a person during a tool call', function () {
  this.timeout(90_000);
  const server = useOwnWorkerAndApi(SETTINGS);
  let shortWait: { url: string; close(): Promise<void> };
  before(async () => {
    // Runs triggered through this API wait 2 s for an answer (the limit is the run's, set when it starts).
    shortWait = await startApi({ ...SETTINGS, INPUT_TIMEOUT_S: '2' });
  });
  after(() => shortWait?.close());

  /** A user of `base` with server-everything installed as `ev` in their default profile, and a task `ask`. */
  async function user(base = server.url) {
    const { username, sessionId } = await signedIn();
    const api = apiFor(sessionId, base);
    const installed = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url } });
    expect(installed.status, installed.text).to.equal(201);
    await createTask(api, 'default', 'ask');
    return { username, api, sessionId };
  }

  /** The model calls `tool` once, then answers with what the tool gave it (once `hold` resolves). */
  function scriptOneCall(tool: string, args: Record<string, unknown> = {}, hold: Promise<unknown> = Promise.resolve()) {
    getStack().fake.script([openaiToolCall([{ id: 'call_1', name: tool, arguments: args }]), async (req) => {
      await hold;
      return openaiText(`final: ${toolText(req)}`);
    }]);
  }

  async function trigger(api: Api) {
    const res = await postSigned(await signedUrl(api, 'default', 'ask'), { text: 'x' });
    expect(res.status, res.text).to.equal(201);
    return { url: res.body.url as string, path: new URL(res.body.url as string).pathname };
  }

  /** The run once it waits on a question: its last entry's `input`. */
  async function question(api: Api, path: string) {
    return until('the question', async () => {
      const run = (await api.get(path)).body;
      const last = run.results.at(-1);
      return run.status === 'pending' && last?.input ? { run, input: last.input } : undefined;
    });
  }

  it('waits pending on the question, lists it, and hands the accepted content to the server; the run goes on running', async () => {
    const { api, username } = await user();
    let release!: () => void;
    scriptOneCall(ASK, {}, new Promise<void>((resolve) => (release = resolve)));
    const { url, path } = await trigger(api);
    const { run, input } = await question(api, path);
    expect(run.results.at(-1).msg).to.equal(`input needed: ${ASK}`);
    expect(input).to.have.keys(['id', 'tool', 'message', 'schema']);
    expect(input.tool).to.equal(ASK);
    expect(input.schema.required).to.deep.equal(['name']);

    const listed = (await api.get('/api/approvals/~')).body.approvals;
    expect(listed).to.have.length(1);
    expect(listed[0]).to.deep.include({ run_url: url, kind: 'input', id: input.id, tool: ASK, message: input.message, schema: input.schema });
    expect(new Date(listed[0].asked_at).toISOString()).to.equal(listed[0].asked_at);

    // Longer than MCP_CALL_TIMEOUT_MS: the call waits for the person all the same.
    await sleep(1_500);
    const answered = await api.post(`${path}/inputs/${input.id}`, { action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.org' } });
    expect(answered.status, answered.text).to.equal(202);
    expect(answered.body).to.deep.equal({ url });
    const going = await until('the run running again', async () => {
      const now = (await api.get(path)).body;
      return now.status === 'running' && now;
    });
    expect(msgs(going)).to.include(`input accepted by ${username}: ${ASK}`);
    expect((await api.get('/api/approvals/~')).body.approvals).to.deep.equal([]);

    const again = await api.post(`${path}/inputs/${input.id}`, { action: 'decline' });
    expect(again.status, again.text).to.equal(409);
    expect(again.body.error.code).to.equal('input_answered');
    const unknown = await api.post(`${path}/inputs/${crypto.randomUUID()}`, { action: 'decline' });
    expect(unknown.status, unknown.text).to.equal(404);

    release();
    const done = await waitForRun(api, url);
    expect(done.status, JSON.stringify(done.results)).to.equal('ready');
    expect(done.results.at(-1).lastMessage.content).to.include('Name: Ada Lovelace');
    // The record says what was answered, never the content.
    const answerEntry = done.results.find((e: any) => e.msg.startsWith('input accepted'));
    expect(JSON.stringify(answerEntry)).not.to.include('Ada');
  });

  for (const action of ['decline', 'cancel'] as const) {
    it(`tells the server the person chose to ${action}, and the model hears what the tool made of it`, async () => {
      const { api, username } = await user();
      scriptOneCall(ASK);
      const { url, path } = await trigger(api);
      const { input } = await question(api, path);
      const answered = await api.post(`${path}/inputs/${input.id}`, { action });
      expect(answered.status, answered.text).to.equal(202);
      const done = await waitForRun(api, url);
      expect(done.status, JSON.stringify(done.results)).to.equal('ready');
      expect(done.results.at(-1).lastMessage.content).to.include(action === 'decline' ? 'User declined' : 'User cancelled');
      expect(msgs(done)).to.include(`input ${action === 'decline' ? 'declined' : 'cancelled'} by ${username}: ${ASK}`);
    });
  }

  it('answers 400 naming the field when the content does not fit the question, and keeps the question open', async () => {
    const { api } = await user();
    scriptOneCall(ASK);
    const { url, path } = await trigger(api);
    const { input } = await question(api, path);
    const at = `${path}/inputs/${input.id}`;
    const refused = async (body: unknown, message: string | RegExp) => {
      const res = await api.post(at, body);
      expect(res.status, res.text).to.equal(400);
      if (typeof message === 'string') expect(res.body.error.message).to.equal(message);
      else expect(res.body.error.message).to.match(message);
    };
    await refused({ action: 'accept' }, 'content.name: required');
    await refused({ action: 'accept', content: { check: true } }, 'content.name: required');
    await refused({ action: 'accept', content: { name: 42 } }, /^content\.name: /);
    await refused({ action: 'accept', content: { name: 'Ada', email: 'not an address' } }, /^content\.email: .*email/);
    await refused({ action: 'accept', content: { name: 'Ada', integer: 500 } }, /^content\.integer: /);
    await refused({ action: 'decline', content: { name: 'Ada' } }, /^content: /);
    await refused({ action: 'maybe' }, /^action: /);
    await refused({ action: 'accept', content: { name: { first: 'Ada' } } }, /^content\.name: /);
    expect((await api.get(path)).body.status).to.equal('pending');

    const answered = await api.post(at, { action: 'accept', content: { name: 'Ada' } });
    expect(answered.status, answered.text).to.equal(202);
    expect((await waitForRun(api, url)).results.at(-1).lastMessage.content).to.include('Name: Ada');
  });

  it('declines the question for the person once INPUT_TIMEOUT_S passes without an answer', async () => {
    const { api } = await user(shortWait.url);
    scriptOneCall(ASK);
    const { url, path } = await trigger(api);
    const { input } = await question(api, path);
    const done = await waitForRun(api, url);
    expect(done.status, JSON.stringify(done.results)).to.equal('ready');
    expect(msgs(done)).to.include(`input declined: ${ASK} (no answer within 2 s, INPUT_TIMEOUT_S)`);
    expect(done.results.at(-1).lastMessage.content).to.include('User declined');
    const late = await api.post(`${path}/inputs/${input.id}`, { action: 'accept', content: { name: 'Ada' } });
    expect(late.status, late.text).to.equal(409);
  });

  it('sends the person to the URL of a URL question, which an accept without content answers', async () => {
    const { api, username } = await user();
    scriptOneCall(ASK_URL, { url: 'https://consent.example.org/start', message: 'Sign in over there' });
    const { url, path } = await trigger(api);
    const { input } = await question(api, path);
    expect(input).to.deep.include({ tool: ASK_URL, message: 'Sign in over there', url: 'https://consent.example.org/start' });
    expect(input).not.to.have.property('schema');
    const withContent = await api.post(`${path}/inputs/${input.id}`, { action: 'accept', content: { done: true } });
    expect(withContent.status, withContent.text).to.equal(400);
    expect(withContent.body.error.message).to.match(/^content: /);
    const answered = await api.post(`${path}/inputs/${input.id}`, { action: 'accept' });
    expect(answered.status, answered.text).to.equal(202);
    const done = await waitForRun(api, url);
    expect(done.results.at(-1).lastMessage.content).to.include('User completed the URL elicitation flow');
    expect(msgs(done)).to.include(`input accepted by ${username}: ${ASK_URL}`);
  });

  it("asks a person the question of a task that waits for input (tasks/result's stream), and the task goes on to its report", async () => {
    const { api, username } = await user();
    scriptOneCall('ev__simulate-research-query', { topic: 'python', ambiguous: true });
    const { url, path } = await trigger(api);
    const { input } = await question(api, path);
    expect(input.tool).to.equal('ev__simulate-research-query');
    expect(input.schema.required).to.deep.equal(['interpretation']);
    const bad = await api.post(`${path}/inputs/${input.id}`, { action: 'accept', content: { interpretation: 'lizard' } });
    expect(bad.status, bad.text).to.equal(400);
    expect(bad.body.error.message).to.match(/^content\.interpretation: /);
    const answered = await api.post(`${path}/inputs/${input.id}`, { action: 'accept', content: { interpretation: 'snake' } });
    expect(answered.status, answered.text).to.equal(202);
    const done = await waitForRun(api, url, 40_000);
    expect(done.status, JSON.stringify(done.results)).to.equal('ready');
    expect(done.results.at(-1).lastMessage.content).to.include('Research Report: python (snake)');
    expect(msgs(done)).to.include(`input accepted by ${username}: ev__simulate-research-query`);
  });

  it('lists the question in ptr approvals, and ptr run answer answers it', async () => {
    const { api, sessionId } = await user();
    scriptOneCall(ASK);
    const { url, path: runPath } = await trigger(api);
    const { input } = await question(api, runPath);
    const run = runPath.split('/').pop()!;
    const ptr = (args: string[]) => ptrAs(args, sessionId, server.url);
    const listed = await ptr(['approvals']);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.include(`asks: "${input.message}"`);
    // The command to edit, with the form's required field, and the fields as a person reads them.
    expect(listed.stdout).to.include(`ptr run answer ask ${run} ${input.id} --accept '{"name":"<name>"}'`);
    expect(listed.stdout).to.match(/\n {6}name \(string, required\)/);
    const both = await ptr(['run', 'answer', 'ask', run, input.id, '--accept', '{}', '--decline']);
    expect(both.code).to.equal(2);
    const bad = await ptr(['run', 'answer', 'ask', run, input.id, '--accept', '{}']);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.include('content.name: required');
    const answered = await ptr(['run', 'answer', 'ask', run, input.id, '--accept', '{"name":"Ada"}']);
    expect(answered.code, answered.stderr).to.equal(0);
    expect(answered.stdout).to.equal(`accepted: ${input.id}\n`);
    expect((await waitForRun(api, url)).results.at(-1).lastMessage.content).to.include('Name: Ada');
  });

  it('ends the wait when the run is cancelled: the run ends cancelled and lists nothing more', async () => {
    const { api, username } = await user();
    scriptOneCall(ASK);
    const { url, path } = await trigger(api);
    const { input } = await question(api, path);
    const cancelled = await api.post(`${path}/cancel`);
    expect(cancelled.status, cancelled.text).to.equal(202);
    const done = await waitForRun(api, url);
    expect(done.status).to.equal('error');
    expect(done.results.at(-1).error).to.equal(`cancelled by ${username}`);
    expect((await api.get('/api/approvals/~')).body.approvals).to.deep.equal([]);
    const late = await api.post(`${path}/inputs/${input.id}`, { action: 'decline' });
    expect(late.status, late.text).to.equal(409);
    expect(late.body.error.code).to.equal('run_closed');
  });
});
