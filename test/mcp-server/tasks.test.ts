import { expect } from 'chai';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { signedIn, startApi } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, until } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { mcpClient, mcpUrl } from '../helpers/mcp-client';

const RELATED = 'io.modelcontextprotocol/related-task';
const answered = (req: RecordedRequest) => (req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** A gate the fake provider waits on: the run stays `working` until the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const callAsTask = (client: Client, name: string, args: Record<string, unknown>) =>
  client.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, CreateTaskResultSchema);

async function rpcError(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error('expected a JSON-RPC error');
}

describe('MCP server: calls as MCP tasks', () => {
  beforeEach(() => getStack().fake.reset());
  after(() => getStack().fake.reset());

  it('answers a task call at once with the task, which tasks/get polls and tasks/result ends with the result', async () => {
    const me = await signedIn('mcp-task');
    await createTask(me.api, 'default', 'greet');
    const held = gate();
    getStack().fake.script(async (req) => {
      await held.opened;
      return openaiText(`hello ${lastUserText(req)}`);
    });
    const client = await mcpClient(me.sessionId);
    const { task } = await callAsTask(client, 'greet', { text: 'Cy' });
    expect(task.status).to.equal('working');
    expect(task.taskId).to.match(/^[A-Za-z0-9_-]{40,}$/);
    expect(task).to.include({ ttl: null, pollInterval: 1000 });
    expect(new Date(task.createdAt).toISOString()).to.equal(task.createdAt);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).to.equal('working');
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).to.deep.equal([task.taskId]);
    held.open();
    const result = (await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
    expect(result.content).to.deep.equal([{ type: 'text', text: 'hello Say Cy' }]);
    expect(result._meta?.[RELATED]).to.deep.equal({ taskId: task.taskId });
    expect((await client.experimental.tasks.getTask(task.taskId)).status).to.equal('completed');
  });

  it('binds a task id to its user: another user gets the error an unknown id gets', async () => {
    const me = await signedIn('mcp-bound');
    const other = await signedIn('mcp-other');
    await createTask(me.api, 'default', 'greet');
    getStack().fake.script(() => openaiText('ok'));
    const mine = await mcpClient(me.sessionId);
    const theirs = await mcpClient(other.sessionId);
    const { task } = await callAsTask(mine, 'greet', { text: 'x' });
    const stolen = await rpcError(theirs.experimental.tasks.getTask(task.taskId));
    const unknown = await rpcError(theirs.experimental.tasks.getTask('A'.repeat(43)));
    expect(stolen.code).to.equal(-32602);
    expect(stolen.message).to.equal(unknown.message);
    expect((await rpcError(theirs.experimental.tasks.cancelTask(task.taskId))).message).to.equal(unknown.message);
    expect((await theirs.experimental.tasks.listTasks()).tasks).to.deep.equal([]);
  });

  it('cancels a working task, and answers -32602 to cancelling one that has ended', async () => {
    const me = await signedIn('mcp-cancel');
    await createTask(me.api, 'default', 'slow');
    getStack().fake.script(() => ({ hang: true }));
    const client = await mcpClient(me.sessionId);
    const { task } = await callAsTask(client, 'slow', { text: 'x' });
    await until('the provider call', () => getStack().fake.requests.some((req) => lastUserText(req) === 'Say x'));
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).to.equal('cancelled');
    const ended = await until('the run to end', async () => {
      const now = await client.experimental.tasks.getTask(task.taskId);
      return now.status !== 'working' && now;
    });
    expect(ended.status).to.equal('cancelled');
    const again = await rpcError(client.experimental.tasks.cancelTask(task.taskId));
    expect(again.code).to.equal(-32602);
    expect(again.message).to.match(/already ended/);
  });

  it('asks for a pending approval by elicitation through tasks/result; the answer decides it', async () => {
    const me = await signedIn('mcp-approve');
    await installServlet(me.api, me.username, 'greeter', 'hello');
    const gated = await me.api.post('/api/profiles/~/default/installations', { servlet_slug: `${me.username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
    expect(gated.status, gated.text).to.equal(200);
    await createTask(me.api, 'default', 'ask');
    getStack().fake.script((req) => (answered(req) ? openaiText('greeted') : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: lastUserText(req) } }])));
    const client = await mcpClient(me.sessionId);
    const asked: Array<{ message: string; meta: unknown }> = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push({ message: request.params.message, meta: request.params._meta?.[RELATED] });
      return { action: 'accept', content: { approve: true } };
    });
    const { task } = await callAsTask(client, 'ask', { text: 'Di' });
    await until('the approval', async () => (await client.experimental.tasks.getTask(task.taskId)).status === 'input_required');
    const waiting = await client.experimental.tasks.getTask(task.taskId);
    expect(waiting.statusMessage).to.match(/hello__greet/);
    const result = (await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
    expect(asked).to.have.length(1);
    expect(asked[0]!.message).to.match(/hello__greet/);
    expect(asked[0]!.meta).to.deep.equal({ taskId: task.taskId });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'greeted' }]);
    // Decided exactly as the HTTP route decides: the run's entries show the tool ran.
    const run = await me.api.get(`/api/runs/~/default/ask/${(result.structuredContent as { run: string }).run}`);
    expect(JSON.stringify(run.body.results)).to.match(/Hello, Say Di/i);
  });

  it('leaves the run going when the client drops a call; a later client reads it by tasks/result', async () => {
    const me = await signedIn('mcp-drop');
    await createTask(me.api, 'default', 'slow');
    const held = gate();
    getStack().fake.script(async (req) => {
      await held.opened;
      return openaiText(`late ${lastUserText(req)}`);
    });
    const first = await mcpClient(me.sessionId);
    const aborted = new AbortController();
    const call = first.callTool({ name: 'slow', arguments: { text: 'Ed' } }, CallToolResultSchema, { signal: aborted.signal });
    await until('the provider call', () => getStack().fake.requests.some((req) => lastUserText(req) === 'Say Ed'));
    aborted.abort();
    await call.catch(() => undefined);
    await first.close();
    held.open();
    const later = await mcpClient(me.sessionId);
    const [dropped] = (await later.experimental.tasks.listTasks()).tasks;
    expect(dropped).to.not.equal(undefined);
    const result = (await later.experimental.tasks.getTaskResult(dropped!.taskId, CallToolResultSchema)) as CallToolResult;
    expect(result.content).to.deep.equal([{ type: 'text', text: 'late Say Ed' }]);
  });

  it('serves one session from two API processes taking turns, approval answers included', async () => {
    const me = await signedIn('mcp-two');
    await installServlet(me.api, me.username, 'greeter', 'hello');
    await me.api.post('/api/profiles/~/default/installations', { servlet_slug: `${me.username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
    await createTask(me.api, 'default', 'ask');
    getStack().fake.script((req) => (answered(req) ? openaiText('both') : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'x' } }])));
    const second = await startApi({});
    const bases = [getStack().apiUrl, second.url];
    const served: string[] = [];
    let turn = 0;
    // Every request goes to the next process in turn: initialize to one, the next request to the other, and so on.
    const alternating = (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const base = new URL(bases[turn++ % 2]!);
      url.host = base.host;
      served.push(url.host);
      return fetch(url, init);
    };
    const { Client: SdkClient } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new SdkClient({ name: 'turns', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl()), { fetch: alternating, requestInit: { headers: { Authorization: `Bearer ${me.sessionId}` } } }));
    try {
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { approve: true } }));
      expect((await client.listTools()).tools.map((t) => t.name)).to.deep.equal(['ask']);
      const { task } = await callAsTask(client, 'ask', { text: 'x' });
      await until('the approval', async () => (await client.experimental.tasks.getTask(task.taskId)).status === 'input_required');
      const result = (await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)) as CallToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: 'both' }]);
      expect(new Set(served).size).to.equal(2);
    } finally {
      await client.close();
      await second.close();
    }
  });

  it('resumes a call whose API process went away on another process (GET with Last-Event-ID)', async () => {
    const me = await signedIn('mcp-resume');
    await createTask(me.api, 'default', 'slow');
    const held = gate();
    getStack().fake.script(async (req) => {
      await held.opened;
      return openaiText(`resumed ${lastUserText(req)}`);
    });
    const leaving = await startApi({});
    let gone = false;
    const hosts: string[] = [];
    // Requests go to the process that is leaving until it has gone, then to the stack's own.
    const routed = (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input);
      url.host = new URL(gone ? getStack().apiUrl : leaving.url).host;
      hosts.push(`${init?.method ?? 'GET'} ${url.host} ${new Headers(init?.headers).get('last-event-id') ? 'resume' : ''}`);
      return fetch(url, init);
    };
    const { Client: SdkClient } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new SdkClient({ name: 'resume', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl()), { fetch: routed, requestInit: { headers: { Authorization: `Bearer ${me.sessionId}` } } }));
    try {
      const call = client.callTool({ name: 'slow', arguments: { text: 'Fa' } }, CallToolResultSchema, { timeout: 60_000 });
      await until('the provider call', () => getStack().fake.requests.some((req) => lastUserText(req) === 'Say Fa'));
      gone = true;
      await leaving.close();
      held.open();
      const result = (await call) as CallToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: 'resumed Say Fa' }]);
      expect(hosts.some((h) => h.endsWith('resume') && h.includes(new URL(getStack().apiUrl).host))).to.equal(true);
    } finally {
      await client.close();
    }
  });
});
