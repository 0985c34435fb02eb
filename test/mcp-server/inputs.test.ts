import crypto from 'node:crypto';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
  type ElicitRequest,
  type ElicitResult,
  type LoggingMessageNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { everythingServer } from '../helpers/mcp-everything';
import { createTask, until } from '../helpers/runs';
import { atTeardown, getStack } from '../helpers/stack';
import { mcpUrl } from '../helpers/mcp-client';

const RELATED = 'io.modelcontextprotocol/related-task';
const RUN_META = 'io.github.prompt-task-runner/run';
const ASK = 'ev__trigger-elicitation-request';
const ASK_URL = 'ev__trigger-url-elicitation';
/** The text of a tool result (its one text content). */
const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
const toolText = (req: RecordedRequest) => String((req.body.messages as Array<{ role: string; content?: unknown }>).find((m) => m.role === 'tool')?.content ?? '');

/** Loopback MCP servers allowed, a queue of these tests' own, and a call time-out shorter than a person's answer. */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', MCP_CALL_TIMEOUT_MS: '1000', TEMPORAL_TASK_QUEUE: `mcp-server-inputs-${crypto.randomBytes(4).toString('hex')}` };

/**
 * A run whose MCP tool asks a person something (server-everything's elicitation tools, issue 30) waits
 * `input_required`; an MCP client that takes elicitation is asked the question itself, and its answer goes to the run
 * as `POST <run path>/inputs/:id` would.
 */
describe('MCP server: an input a run waits on, asked of the MCP client', function () {
  this.timeout(90_000);
  const server = useOwnWorkerAndApi(SETTINGS);

  /** A user with server-everything installed as `ev` in their default profile, and a task `ask`. */
  async function user() {
    const { username, sessionId } = await signedIn('mcp-input');
    const api = apiFor(sessionId, server.url);
    const installed = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url } });
    expect(installed.status, installed.text).to.equal(201);
    await createTask(api, 'default', 'ask');
    return { username, sessionId, api };
  }

  /** The model calls `tool` once, then answers with what the tool gave it. */
  function scriptOneCall(tool: string, args: Record<string, unknown> = {}) {
    getStack().fake.script([openaiToolCall([{ id: 'call_1', name: tool, arguments: args }]), (req) => openaiText(`final: ${toolText(req)}`)]);
  }

  /**
   * The SDK's client declaring `capabilities`, answering each `elicitation/create` with `answers` in turn (noting
   * what it was asked), and noting log messages and the errors it meets sending its answers.
   */
  async function client(token: string, capabilities: ClientCapabilities, answers: ElicitResult[] = []) {
    const mcp = new Client({ name: 'ptr-inputs', version: '1.0.0' }, { capabilities });
    const asked: Array<ElicitRequest['params']> = [];
    const notices: Array<LoggingMessageNotification['params']> = [];
    const errors: string[] = [];
    if (capabilities.elicitation) {
      mcp.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return answers[asked.length - 1] ?? { action: 'cancel' };
      });
    }
    mcp.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notices.push(n.params));
    mcp.onerror = (err) => void errors.push(err.message);
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl('default', server.url)), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await mcp.connect(transport);
    atTeardown(() => mcp.close().catch(() => undefined));
    return { mcp, transport, asked, notices, errors };
  }

  const callAsTask = (mcp: Client, run: string) =>
    mcp.request({ method: 'tools/call', params: { name: 'ask', arguments: { text: 'x' }, task: { ttl: 60_000 }, _meta: { [RUN_META]: run } } }, CreateTaskResultSchema);

  /** The task once `tasks/get` shows it `input_required` (it reads the run's record, which follows the run). */
  const inputRequired = (mcp: Client, taskId: string) =>
    until('the task to be input_required', async () => {
      const now = await mcp.experimental.tasks.getTask(taskId);
      return now.status === 'input_required' && now;
    });

  /** The run's open question as its last entry has it. */
  async function question(api: Api, run: string) {
    return until('the question', async () => {
      const now = (await api.get(`/api/runs/~/default/ask/${run}`)).body;
      const last = now.results.at(-1);
      return now.status === 'pending' && last?.input ? (last.input as { id: string; message: string; schema?: Record<string, unknown>; url?: string }) : undefined;
    });
  }

  it('asks a form question by elicitation through tasks/result; the accepted content reaches the MCP server and the run ends ready', async () => {
    const { api, username, sessionId } = await user();
    scriptOneCall(ASK);
    const { mcp, asked } = await client(sessionId, { elicitation: { form: {} } }, [{ action: 'accept', content: { name: 'Ada Lovelace', check: true } }]);
    const { task } = await callAsTask(mcp, 'r1');
    const input = await question(api, 'r1');
    await inputRequired(mcp, task.taskId);

    const result = (await mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
    expect(asked).to.have.length(1);
    expect(asked[0]!.message).to.equal(input.message);
    const requested = (asked[0] as { requestedSchema: { properties: object; required?: string[] } }).requestedSchema;
    expect(requested.required).to.deep.equal(['name']);
    expect(Object.keys(requested.properties)).to.deep.equal(Object.keys(input.schema!.properties as object));
    expect(asked[0]!._meta?.[RELATED]).to.deep.equal({ taskId: task.taskId });
    expect(result.structuredContent).to.deep.include({ run: 'r1', status: 'ready' });
    expect(textOf(result)).to.include('Name: Ada Lovelace');
    const run = (await api.get('/api/runs/~/default/ask/r1')).body;
    expect(run.results.map((e: { msg: string }) => e.msg)).to.include(`input accepted by ${username}: ${ASK}`);
  });

  it('passes a decline to the run from a waiting tools/call, and the model hears what the tool made of it', async () => {
    const { sessionId } = await user();
    scriptOneCall(ASK);
    const { mcp, asked } = await client(sessionId, { elicitation: {} }, [{ action: 'decline' }]);
    const result = (await mcp.callTool({ name: 'ask', arguments: { text: 'x' }, _meta: { [RUN_META]: 'r2' } }, CallToolResultSchema, { timeout: 60_000 })) as CallToolResult;
    expect(asked).to.have.length(1);
    expect(asked[0]!._meta?.[RELATED]).to.equal(undefined);
    expect(result.structuredContent).to.deep.include({ status: 'ready' });
    expect(textOf(result)).to.include('User declined');
  });

  it('answers content that does not fit the schema with a JSON-RPC error naming the field, and keeps the question open', async () => {
    const { api, sessionId } = await user();
    scriptOneCall(ASK);
    const { mcp, transport, asked, errors } = await client(sessionId, { elicitation: { form: {} } }, [{ action: 'accept', content: { name: 42 } }]);
    const { task } = await callAsTask(mcp, 'r3');
    const input = await question(api, 'r3');
    const result = mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const refused = await until('the refused answer', () => errors.find((e) => e.includes('POSTing')));
    expect(refused).to.include('"code":-32602').and.match(/content\.name: /);
    expect(asked).to.have.length(1);
    await inputRequired(mcp, task.taskId);
    expect((await api.get('/api/runs/~/default/ask/r3')).body.status).to.equal('pending');

    // The answer that fits, sent as the client sends one, decides it; once decided, the same answer is refused.
    const send = (content: Record<string, unknown>) =>
      fetch(mcpUrl('default', server.url), {
        method: 'POST',
        headers: { Authorization: `Bearer ${sessionId}`, 'Mcp-Session-Id': transport.sessionId!, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: `ptr-input:${task.taskId}:${input.id}`, result: { action: 'accept', content } }),
      });
    expect((await send({ name: 'Ada' })).status).to.equal(202);
    expect(textOf(await result)).to.include('Name: Ada');
    const again = await send({ name: 'Ada' });
    expect(again.status).to.equal(400);
    const body = (await again.json()) as { error: { code: number; message: string } };
    expect(body.error.code).to.equal(-32602);
    expect(body.error.message).to.match(/^(run "r3" has already ended|input "[^"]+" was already answered \(accept\))$/);
  });

  it('asks a URL question in URL mode of a client that declared it, and its accept answers it', async () => {
    const { sessionId } = await user();
    scriptOneCall(ASK_URL, { url: 'https://consent.example.org/start', message: 'Sign in over there' });
    const { mcp, asked } = await client(sessionId, { elicitation: { form: {}, url: {} } }, [{ action: 'accept' }]);
    const { task } = await callAsTask(mcp, 'r4');
    const result = (await mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
    expect(asked).to.have.length(1);
    expect(asked[0]).to.deep.include({ mode: 'url', message: 'Sign in over there', url: 'https://consent.example.org/start' });
    expect((asked[0] as { elicitationId: string }).elicitationId).to.be.a('string');
    expect(textOf(result)).to.include('User completed the URL elicitation flow');
  });

  it('tells a client that did not declare URL elicitation how to answer a URL question, and asks it nothing', async () => {
    const { api, sessionId } = await user();
    scriptOneCall(ASK_URL, { url: 'https://consent.example.org/start', message: 'Sign in over there' });
    const { mcp, asked, notices } = await client(sessionId, { elicitation: { form: {} } });
    const { task } = await callAsTask(mcp, 'r5');
    const result = mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await until('the log message', () => notices.length > 0);
    const { message, ask } = notices[0]!.data as { message: string; ask: { kind: string; id: string } };
    expect(ask.kind).to.equal('input');
    expect(message).to.include('Open https://consent.example.org/start').and.include(`/inputs/${ask.id} {"action": "accept"}`);
    const answered = await api.post(`/api/runs/~/default/ask/r5/inputs/${ask.id}`, { action: 'accept' });
    expect(answered.status, answered.text).to.equal(202);
    expect(textOf(await result)).to.include('User completed the URL elicitation flow');
    expect(asked).to.deep.equal([]);
  });

  it('tells a client without elicitation how to answer a form question in tasks/get and as a log message', async () => {
    const { api, sessionId } = await user();
    scriptOneCall(ASK);
    const { mcp, notices } = await client(sessionId, {});
    const { task } = await callAsTask(mcp, 'r6');
    const input = await question(api, 'r6');
    const waiting = await inputRequired(mcp, task.taskId);
    expect(waiting.statusMessage).to.include(input.message).and.include(`/inputs/${input.id} {"action": "accept", "content": <an object matching`);
    const result = mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await until('the log message', () => notices.length > 0);
    expect((notices[0]!.data as { message: string }).message).to.equal(waiting.statusMessage);
    const answered = await api.post(`/api/runs/~/default/ask/r6/inputs/${input.id}`, { action: 'accept', content: { name: 'Grace' } });
    expect(answered.status, answered.text).to.equal(202);
    expect(textOf(await result)).to.include('Name: Grace');
  });
});
