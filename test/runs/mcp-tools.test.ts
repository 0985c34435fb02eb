import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { api as apiFor, signedIn, startApi, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { anthropicText, anthropicToolUse, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, historyText, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { everythingServer } from '../helpers/mcp-everything';
import { hostileServer, TOOLS } from '../helpers/mcp-hostile-server';
import { runWorkflowId } from '../../src/temporal/ids';
import { startWorkerProcess } from '../helpers/worker-process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { seal } from '../../src/store/secrets';
import { discoverTools } from '../../src/mcp/discover';
import { mcpClientOptions } from '../../src/mcp/options';
import { installMcp as installMcpServer, type McpApproval, type McpListing, type McpToolRecord } from '../../src/store/mcp-installs';

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');
const msgs = (run: { results: Array<{ msg: string }> }) => run.results.map((e) => e.msg);

/** The worker and API of these tests: loopback MCP servers are allowed to them (MCP_ALLOWLIST), on a queue of their own. */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `mcp-runs-${crypto.randomBytes(4).toString('hex')}` };
let server: { readonly url: string };

/** A signed-in user of this file's API. */
async function user() {
  const { username, sessionId } = await signedIn();
  return { username, api: apiFor(sessionId, server.url) };
}

/** Installs an MCP server into the user's `default` profile as the API does: its tools listed, then stored. */
async function installMcp(username: string, name: string, url: string, settings: { approval?: McpApproval; tools?: string[] } = {}, headers: Record<string, string> = {}, extraTools: McpToolRecord[] = []) {
  const { db, keyring, configWith } = getStack();
  const listing = await discoverTools({ url, headers }, mcpClientOptions(configWith(SETTINGS)));
  await installMcpServer(db.models, keyring, {
    owner: username,
    profile: 'default',
    name,
    url: new URL(url),
    headers,
    listing: { tools: [...(listing.tools as McpToolRecord[]), ...extraTools], serverInfo: listing.serverInfo as McpListing['serverInfo'], protocolVersion: listing.protocolVersion },
    allowedTools: settings.tools ?? null,
    approval: settings.approval ?? 'destructive',
    allowUpdate: true,
  });
}

/** One call of `tool` on the server, straight through the SDK (to set a counting tool's state). */
async function callOnce(url: string, tool: string): Promise<void> {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.callTool({ name: tool, arguments: {} }).catch(() => undefined);
  await client.close();
}

/** A URL sealed with the test stack's keyring, as an install stores it. */
const sealedUrl = (url: string) => seal(getStack().keyring, url);

async function trigger(api: Api, task: string, body: unknown = { text: 'x' }) {
  const res = await postSigned(await signedUrl(api, 'default', task), body);
  expect(res.status, res.text).to.equal(201);
  return res.body.url as string;
}

describe('runs: tools from MCP servers installed in the profile', function () {
  this.timeout(60_000);
  server = useOwnWorkerAndApi(SETTINGS);

  it('lets the model call a tool of a real MCP server installed through the API, and feeds its answer back', async () => {
    const { api } = await user();
    const { fake } = getStack();
    // Through the API, as a user installs it.
    const installed = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url } });
    expect(installed.status, installed.text).to.equal(201);
    await createTask(api, 'default', 'echo');
    fake.script([openaiToolCall([{ id: 'call_1', name: 'ev__echo', arguments: { message: 'hi there' } }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const run = await waitForRun(api, await trigger(api, 'echo'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^final: .*hi there/);
    const offered = (fake.requests[0]!.body.tools as any[]).map((t) => t.function.name);
    expect(offered).to.include.members(['ev__echo', 'ev__get-sum', 'ev__get-tiny-image']);
    expect(msgs(run)).to.include.members(['tool call: ev__echo', 'tool result: ev__echo']);
  });

  it('gives Anthropic an MCP tool\'s image as an image block, and OpenAI a placeholder naming its type and size', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    await installMcp(username, 'ev', (await everythingServer()).url);
    await createTask(api, 'default', 'claude', { runner: 'anthropic' });
    await createTask(api, 'default', 'gpt');
    fake.script([anthropicToolUse([{ id: 'toolu_1', name: 'ev__get-tiny-image', input: {} }]), anthropicText('seen')]);
    const claude = await waitForRun(api, await trigger(api, 'claude'));
    expect(claude.status, JSON.stringify(claude.results)).to.equal('ready');
    const result = fake.requests[1]!.body.messages.at(-1).content[0];
    expect(result).to.deep.include({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: false });
    expect(result.content.map((c: any) => c.type)).to.include('image');

    fake.reset();
    fake.script([openaiToolCall([{ id: 'call_1', name: 'ev__get-tiny-image', arguments: {} }]), openaiText('seen')]);
    const gpt = await waitForRun(api, await trigger(api, 'gpt'));
    expect(gpt.status, JSON.stringify(gpt.results)).to.equal('ready');
    expect(toolMessages(fake.requests[1]!)[0].content).to.match(/\[image image\/png, \d+ bytes/);
  });

  it('adds a long MCP call\'s progress to the run\'s log', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    await installMcp(username, 'ev', (await everythingServer()).url);
    await createTask(api, 'default', 'long');
    fake.script([openaiToolCall([{ name: 'ev__trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }]), openaiText('done')]);
    const run = await waitForRun(api, await trigger(api, 'long'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    const progress = msgs(run).filter((m) => m.startsWith('ev__trigger-long-running-operation: progress'));
    expect(progress, JSON.stringify(msgs(run))).to.have.length.greaterThan(0);
    expect(msgs(run).indexOf(progress[0]!)).to.be.lessThan(msgs(run).indexOf('tool result: ev__trigger-long-running-operation'));
  });

  it('adds an MCP call\'s progress and the server\'s log messages for it to the run\'s log, at their levels, before its result', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    await installMcp(username, 'h', (await hostileServer()).url('/mcp'), { approval: 'none' });
    await createTask(api, 'default', 'said');
    fake.script([openaiToolCall([{ name: `h__${TOOLS.progress}`, arguments: {} }]), openaiText('done')]);
    const run = await waitForRun(api, await trigger(api, 'said'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    const said = run.results.filter((e: any) => e.msg.startsWith(`h__${TOOLS.progress}: `)).map((e: any) => [e.msg.slice(`h__${TOOLS.progress}: `.length), e.level]);
    expect(said, JSON.stringify(said)).to.deep.include.members([
      ['progress 1/3: step 1', 30],
      ['progress 3/3: step 3', 30],
      ['hostile: working on step 1', 30],
      ['hostile: working on step 3', 40],
    ]);
    const at = (msg: string) => msgs(run).indexOf(msg);
    expect(at(`h__${TOOLS.progress}: hostile: working on step 3`)).to.be.lessThan(at(`tool result: h__${TOOLS.progress}`));
  });

  it('waits for a person\'s decision before a tool MCP\'s annotations call destructive, and not before a read-only one', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    const hostile = await hostileServer();
    await installMcp(username, 'h', hostile.url('/mcp'));
    await createTask(api, 'default', 'ask');
    fake.script([openaiToolCall([{ name: `h__${TOOLS.readOnly}`, arguments: {} }]), openaiToolCall([{ name: `h__${TOOLS.destructive}`, arguments: {} }]), openaiText('done')]);
    const url = await trigger(api, 'ask');
    const path = new URL(url).pathname;
    const waiting = await until('the approval', async () => {
      const read = await api.get(path);
      return read.body.status === 'pending' && read.body.results.find((e: any) => e.approval);
    });
    expect(waiting.approval.tool).to.equal(`h__${TOOLS.destructive}`);
    expect(msgs((await api.get(path)).body)).to.include(`tool result: h__${TOOLS.readOnly}`);
    const decided = await api.post(`${path}/approvals/${waiting.approval.id}`, { approve: true });
    expect(decided.status, decided.text).to.equal(202);
    const run = await waitForRun(api, url);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(msgs(run)).to.include(`tool result: h__${TOOLS.destructive}`);
  });

  it('tells the model a call that may have reached the server and failed "may or may not have run", and runs it once', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    const hostile = await hostileServer();
    // The hostile server answers its misbehaving tools below MCP, without listing them: the install lists this one.
    await installMcp(username, 'h', hostile.url('/mcp'), { approval: 'none' }, {}, [{ name: TOOLS.diesMidCall, inputSchema: { type: 'object' } }]);
    await createTask(api, 'default', 'dies');
    const before = hostile.stats.calls[TOOLS.diesMidCall] ?? 0;
    fake.script([openaiToolCall([{ name: `h__${TOOLS.diesMidCall}`, arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const run = await waitForRun(api, await trigger(api, 'dies'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^final: ERROR: the call may or may not have run/);
    expect(hostile.stats.calls[TOOLS.diesMidCall]! - before, 'the tool ran once').to.equal(1);
    expect(msgs(run)).to.include(`tool result: h__${TOOLS.diesMidCall} (error)`);
  });

  it('makes a call that may have reached the server again when the tool says it is idempotent', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    const hostile = await hostileServer();
    await installMcp(username, 'h', hostile.url('/mcp'));
    await createTask(api, 'default', 'flaky');
    const before = hostile.stats.calls[TOOLS.flakyIdempotent] ?? 0;
    // Odd calls lose their answer: start from one, so this run's first call is one of them.
    if (before % 2 === 1) await callOnce(hostile.url('/mcp'), TOOLS.flakyIdempotent);
    const first = hostile.stats.calls[TOOLS.flakyIdempotent] ?? 0;
    fake.script([openaiToolCall([{ name: `h__${TOOLS.flakyIdempotent}`, arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const run = await waitForRun(api, await trigger(api, 'flaky'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal(`final: set after ${first + 2} calls`);
    expect((hostile.stats.calls[TOOLS.flakyIdempotent] ?? 0) - first, 'sent twice: its first answer was lost').to.equal(2);
    expect(msgs(run).some((m) => m.startsWith(`h__${TOOLS.flakyIdempotent}: failed:`)), JSON.stringify(msgs(run))).to.equal(true);
  });

  it('tries a server that refuses connections again with backoff, then tells the model it could not be reached', async () => {
    const { api, username } = await user();
    const { fake, db } = getStack();
    const hostile = await hostileServer();
    await installMcp(username, 'h', hostile.url('/mcp'), { approval: 'none' });
    // The server moves away after the install (its tools stay listed): every call is refused before it is sent.
    await db.models.Installation.updateOne({ owner: username, profile: 'default', name: 'h' }, { $set: { 'mcp.url_sealed': sealedUrl(hostile.closedUrl) } });
    await createTask(api, 'default', 'gone');
    fake.script([openaiToolCall([{ name: `h__${TOOLS.count}`, arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const run = await waitForRun(api, await trigger(api, 'gone'));
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^final: ERROR: the MCP server of "h" could not be reached \(4 tries\)/);
    expect(msgs(run).filter((m) => m.includes('not reached')), 'each try said in the log').to.have.length(3);
  });

  it('cancels an MCP call in flight when the run is cancelled: the server hears notifications/cancelled', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    const hostile = await hostileServer();
    await installMcp(username, 'h', hostile.url('/mcp'), { approval: 'none' });
    await createTask(api, 'default', 'cancel');
    const before = hostile.stats.cancelled[TOOLS.waitForCancel] ?? 0;
    const calls = hostile.stats.calls[TOOLS.waitForCancel] ?? 0;
    fake.script([openaiToolCall([{ name: `h__${TOOLS.waitForCancel}`, arguments: {} }]), openaiText('never')]);
    const url = await trigger(api, 'cancel');
    await until('the call on the server', () => (hostile.stats.calls[TOOLS.waitForCancel] ?? 0) > calls);
    expect((await api.post(`${new URL(url).pathname}/cancel`)).status).to.equal(202);
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('error');
    await until('the server to hear the cancel', () => (hostile.stats.cancelled[TOOLS.waitForCancel] ?? 0) > before);
  });

  it('tells the model a call whose worker was killed mid-call may or may not have run, and never sends it again', async function () {
    this.timeout(120_000);
    const { username, sessionId } = await signedIn();
    const { fake, env, temporal } = getStack();
    const hostile = await hostileServer();
    // A worker process of its own queue, killed for real while the call waits on the server; its heartbeats say the
    // call was being sent, so the next worker does not send it again (the tool is not idempotent).
    const queue = `mcp-killed-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { ...SETTINGS, TEMPORAL_TASK_QUEUE: queue, PROVIDER_HEARTBEAT_TIMEOUT_MS: '2000' };
    const own = await startApi(settings);
    const children: ChildProcess[] = [];
    try {
      const api = apiFor(sessionId, own.url);
      await installMcp(username, 'h', hostile.url('/mcp'), { approval: 'none' });
      await createTask(api, 'default', 'killed');
      const calls = hostile.stats.calls[TOOLS.hangs] ?? 0;
      fake.script([openaiToolCall([{ name: `h__${TOOLS.hangs}`, arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
      children.push(await startWorkerProcess({ ...env, ...settings }));
      const exited = new Promise((r) => children[0]!.once('exit', r));
      // Killed the moment the server counts the call, in its own handler: as early after the send as can be.
      let counted = calls;
      Object.defineProperty(hostile.stats.calls, TOOLS.hangs, {
        configurable: true,
        enumerable: true,
        get: () => counted,
        set: (n: number) => {
          counted = n;
          children[0]!.kill('SIGKILL');
        },
      });
      const url = await trigger(api, 'killed');
      await until('the call on the server', () => (hostile.stats.calls[TOOLS.hangs] ?? 0) > calls);
      await exited;
      // What the next attempt will read: Temporal had recorded that the call was being sent before the server got it
      // (the SDK's own heartbeats are sent when it sees fit; a worker killed this fast used to leave none).
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'killed', run: url.split('/').at(-1)! });
      const pending = (await temporal.workflow.getHandle(id).describe()).raw.pendingActivities ?? [];
      const details = pending.find((a) => a.activityType?.name === 'callMcpTool')?.heartbeatDetails?.payloads?.[0]?.data;
      expect(details && JSON.parse(Buffer.from(details).toString()), 'the lost attempt\'s recorded heartbeat').to.deep.equal({ sending: true });
      children.push(await startWorkerProcess({ ...env, ...settings }));
      const run = await waitForRun(api, url, 90_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.match(/^final: ERROR: the call may or may not have run: the worker running it was lost/);
      expect((hostile.stats.calls[TOOLS.hangs] ?? 0) - calls, 'the tool was sent once').to.equal(1);

    } finally {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await own.close();
    }
  });

  it('runs a task-required MCP tool as an MCP task, followed on timers, and gives the model its report', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    await installMcp(username, 'ev', (await everythingServer()).url);
    await createTask(api, 'default', 'research');
    fake.script([openaiToolCall([{ name: 'ev__simulate-research-query', arguments: { topic: 'durable agents' } }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const url = await trigger(api, 'research');
    const run = await waitForRun(api, url, 60_000);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^final: .*durable agents/s);
    // Started, followed by tasks/get between timers, its result read: activities on the MCP queue, none held while it worked.
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'research', run: url.split('/').at(-1)! });
    const events = (await getStack().temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
    const activities = events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(activities.filter((a) => a === 'startMcpTask')).to.have.length(1);
    expect(activities.filter((a) => a === 'followMcpTask').length).to.be.greaterThan(0);
    expect(activities.filter((a) => a === 'mcpTaskResult')).to.have.length(1);
    expect(events.filter((e) => e.timerStartedEventAttributes).length).to.be.greaterThan(0);
  });

  it('follows an MCP task to its end after the worker that started it is SIGKILLed', async function () {
    this.timeout(120_000);
    const { username, sessionId } = await signedIn();
    const { fake, env } = getStack();
    const queue = `mcp-task-killed-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { ...SETTINGS, TEMPORAL_TASK_QUEUE: queue };
    const own = await startApi(settings);
    const children: ChildProcess[] = [];
    try {
      const api = apiFor(sessionId, own.url);
      await installMcp(username, 'ev', (await everythingServer()).url);
      await createTask(api, 'default', 'research');
      fake.script([openaiToolCall([{ name: 'ev__simulate-research-query', arguments: { topic: 'survivors' } }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
      children.push(await startWorkerProcess({ ...env, ...settings }));
      const url = await trigger(api, 'research');
      const id = runWorkflowId({ owner: username, profile: 'default', task: 'research', run: url.split('/').at(-1)! });
      const handle = getStack().temporal.workflow.getHandle(id);
      // Kill once the task was started and the workflow waits on a poll timer.
      await until('the task started', async () => ((await handle.fetchHistory()).events ?? []).some((e) => e.timerStartedEventAttributes));
      children[0]!.kill('SIGKILL');
      await new Promise((r) => children[0]!.once('exit', r));
      children.push(await startWorkerProcess({ ...env, ...settings }));
      const run = await waitForRun(api, url, 90_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.match(/^final: .*survivors/s);
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await own.close();
    }
  });

  it('ends a run in error naming settings.tools when the profile offers OpenAI more tools than it accepts', async () => {
    const { api, username } = await user();
    const { fake } = getStack();
    const hostile = await hostileServer();
    await installMcp(username, 'many', hostile.url('/many'), { approval: 'none' });
    await createTask(api, 'default', 'many');
    fake.script([openaiText('never')]);
    const run = await waitForRun(api, await trigger(api, 'many'));
    expect(run.status).to.equal('error');
    expect(run.results.at(-1).error).to.match(/offers 500 tools and openai accepts at most 128.*settings\.tools/);
    expect(fake.requests, 'the model never asked').to.have.length(0);
  });

  it('keeps the install\'s header values out of the run\'s history, entries and the model\'s requests', async () => {
    const { api, username } = await user();
    const { fake, temporal } = getStack();
    const secret = `Bearer mcp-secret-${username}`;
    await installMcp(username, 'ev', (await everythingServer()).url, undefined, { Authorization: secret });
    await createTask(api, 'default', 'secret');
    fake.script([openaiToolCall([{ name: 'ev__echo', arguments: { message: 'x' } }]), openaiText('done')]);
    const url = await trigger(api, 'secret');
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'secret', run: url.split('/').at(-1)! });
    expect(await historyText(temporal, id)).not.to.include(`mcp-secret-${username}`);
    expect(JSON.stringify(run)).not.to.include(`mcp-secret-${username}`);
    expect(JSON.stringify(fake.requests)).not.to.include(`mcp-secret-${username}`);
  });
});
