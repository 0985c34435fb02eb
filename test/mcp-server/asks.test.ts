import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, LoggingMessageNotificationSchema, type CallToolResult, type LoggingMessageNotification } from '@modelcontextprotocol/sdk/types.js';
import { signedIn, type Api } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, until } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { atTeardown, getStack } from '../helpers/stack';
import { mcpUrl } from '../helpers/mcp-client';

const RUN_META = 'io.github.prompt-task-runner/run';
const answered = (req: RecordedRequest) => (req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** The SDK's client declaring no capability at all (no elicitation), noting the log messages it gets. */
async function plainClient(token: string) {
  const client = new Client({ name: 'no-elicitation', version: '1.0.0' });
  const notices: Array<LoggingMessageNotification['params']> = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notices.push(n.params));
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl()), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  atTeardown(() => client.close().catch(() => undefined));
  return { client, notices };
}

/** A task `ask` whose model calls `hello__greet` once, a call the profile's install gates by approval. */
async function gatedTask(me: { api: Api; username: string }) {
  await installServlet(me.api, me.username, 'greeter', 'hello');
  const gated = await me.api.post('/api/profiles/~/default/installations', { servlet_slug: `${me.username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
  expect(gated.status, gated.text).to.equal(200);
  await createTask(me.api, 'default', 'ask');
  getStack().fake.script((req) => (answered(req) ? openaiText('greeted') : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: lastUserText(req) } }])));
}

/** Decides approval `id` of the run at `runUrl` over HTTP, as the message told. */
async function approve(api: Api, runUrl: string, id: string) {
  const decided = await api.post(new URL(`${runUrl}/approvals/${id}`).pathname, { approve: true });
  expect(decided.status, decided.text).to.be.below(300);
}

describe('MCP server: a run waiting on a person, for a client that does not elicit', () => {
  beforeEach(() => getStack().fake.reset());
  after(() => getStack().fake.reset());

  it('says how to decide an approval in tasks/get and once as a log message on tasks/result; the HTTP decision ends the wait', async () => {
    const me = await signedIn('mcp-noelicit');
    await gatedTask(me);
    const { client, notices } = await plainClient(me.sessionId);
    const { task } = await client.request({ method: 'tools/call', params: { name: 'ask', arguments: { text: 'Go' }, task: {}, _meta: { [RUN_META]: 'r1' } } }, CreateTaskResultSchema);
    const waiting = await until('the approval', async () => {
      const now = await client.experimental.tasks.getTask(task.taskId);
      return now.status === 'input_required' && now;
    });
    const runUrl = `${getStack().config.PUBLIC_URL}/api/runs/${me.username}/default/ask/r1`;
    const id = new RegExp(`POST ${runUrl.replace(/[.?]/g, '\\$&')}/approvals/([A-Za-z0-9-]+) `).exec(waiting.statusMessage ?? '')?.[1];
    expect(id, waiting.statusMessage).to.be.a('string');
    expect(waiting.statusMessage).to.include('hello__greet').and.include(`\`ptr run approve ask r1 ${id}\``);

    const result = client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await until('the log message', () => notices.length > 0);
    expect(notices[0]).to.deep.include({ level: 'warning', logger: 'prompt-task-runner' });
    expect((notices[0]!.data as { message: string }).message).to.equal(waiting.statusMessage);
    expect((notices[0]!.data as { ask: unknown }).ask).to.deep.include({ kind: 'approval', id, tool: 'hello__greet' });
    await approve(me.api, runUrl, id!);
    expect(((await result) as CallToolResult).content).to.deep.equal([{ type: 'text', text: 'greeted' }]);
    expect(notices).to.have.length(1);
  });

  it('says how to decide an approval in the progress of a waiting tools/call', async () => {
    const me = await signedIn('mcp-noelicit-call');
    await gatedTask(me);
    const { client } = await plainClient(me.sessionId);
    const progress: string[] = [];
    const call = client.callTool({ name: 'ask', arguments: { text: 'Go' }, _meta: { [RUN_META]: 'r2' } }, CallToolResultSchema, {
      onprogress: (p) => void progress.push(p.message ?? ''),
      timeout: 60_000,
    });
    const runUrl = `${getStack().config.PUBLIC_URL}/api/runs/${me.username}/default/ask/r2`;
    const told = await until('the progress message', () => progress.find((m) => m.includes(`POST ${runUrl}/approvals/`)));
    expect(told).to.match(/^waiting for a decision on a call of the tool "hello__greet"\. /);
    await approve(me.api, runUrl, /\/approvals\/([A-Za-z0-9-]+) /.exec(told)![1]!);
    expect(((await call) as CallToolResult).content).to.deep.equal([{ type: 'text', text: 'greeted' }]);
  });
});
