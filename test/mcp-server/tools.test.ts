import { expect } from 'chai';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { signedIn } from '../helpers/api';
import { lastUserText, openaiText, providerError } from '../helpers/fake-provider';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { mcpClient } from '../helpers/mcp-client';

describe('MCP server: tasks as tools (list, call and wait)', () => {
  beforeEach(() => getStack().fake.reset());
  after(() => getStack().fake.reset());

  it('lists one tool per task of the profile, its input schema from the prompt\'s placeholders', async () => {
    const me = await signedIn('mcp-list');
    await createTask(me.api, 'default', 'greet', { prompt: 'Say {{ text }} to {{ who.name }}{{#loud}}!{{/loud}}' });
    await createTask(me.api, 'default', 'whole', { prompt: 'Look at {{ @payload }}' });
    const client = await mcpClient(me.sessionId);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).to.deep.equal(['greet', 'whole']);
    const greet = tools[0]!;
    expect(greet.inputSchema).to.deep.equal({
      type: 'object',
      properties: { text: { type: 'string' }, who: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, loud: {} },
      required: ['text', 'who'],
      additionalProperties: false,
    });
    expect(greet.execution).to.deep.equal({ taskSupport: 'optional' });
    expect(greet.annotations).to.include({ readOnlyHint: false, openWorldHint: true });
    expect(greet.description).to.match(/openai \(test-model\).*Say \{\{ text \}\}/);
    expect(tools[1]!.inputSchema).to.deep.equal({ type: 'object', properties: {}, additionalProperties: true });
  });

  it('pages the tool list with a cursor', async () => {
    const me = await signedIn('mcp-page');
    for (let i = 0; i < 52; i++) await createTask(me.api, 'default', `t${String(i).padStart(2, '0')}`);
    const client = await mcpClient(me.sessionId);
    const first = await client.listTools();
    expect(first.tools).to.have.length(50);
    expect(first.nextCursor).to.be.a('string');
    const second = await client.listTools({ cursor: first.nextCursor });
    expect(second.tools.map((t) => t.name)).to.deep.equal(['t50', 't51']);
    expect(second.nextCursor).to.equal(undefined);
  });

  it('calls a tool, sends progress as entries arrive and answers with the last message once the run ends', async () => {
    const me = await signedIn('mcp-call');
    await createTask(me.api, 'default', 'greet');
    getStack().fake.script((req) => openaiText(`hello from ${lastUserText(req)}`));
    const client = await mcpClient(me.sessionId);
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = (await client.callTool({ name: 'greet', arguments: { text: 'Ann' } }, CallToolResultSchema, { onprogress: (p) => progress.push(p) })) as CallToolResult;
    expect(result.isError).to.equal(undefined);
    expect(result.content).to.deep.equal([{ type: 'text', text: 'hello from Say Ann' }]);
    expect(result.structuredContent).to.deep.include({ status: 'ready' });
    expect((result.structuredContent as { usage: object }).usage).to.include({ model_calls: 1 });
    expect(progress.length).to.be.greaterThan(0);
    expect(progress.map((p) => p.progress)).to.deep.equal([...progress.map((p) => p.progress)].sort((a, b) => a - b));
    // The run is a run like any other: readable by the HTTP API under the name the call gave it.
    const run = (result.structuredContent as { run: string }).run;
    const read = await me.api.get(`/api/runs/~/default/greet/${run}`);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.status).to.equal('ready');
  });

  it('answers isError with the reason when the run ends in error', async () => {
    const me = await signedIn('mcp-err');
    await createTask(me.api, 'default', 'broken');
    getStack().fake.script(() => providerError('openai', 401, 'bad key'));
    const client = await mcpClient(me.sessionId);
    const result = (await client.callTool({ name: 'broken', arguments: { text: 'x' } })) as CallToolResult;
    expect(result.isError).to.equal(true);
    expect((result.content[0] as { text: string }).text).to.match(/401|key/i);
    expect(result.structuredContent).to.deep.include({ status: 'error' });
  });

  it('runs a call naming its run once: a retried call answers the same run', async () => {
    const me = await signedIn('mcp-idem');
    await createTask(me.api, 'default', 'greet');
    getStack().fake.script((req) => openaiText(`hi ${lastUserText(req)}`));
    const client = await mcpClient(me.sessionId);
    const call = () => client.callTool({ name: 'greet', arguments: { text: 'Bo' }, _meta: { 'io.github.prompt-task-runner/run': 'once-1' } }) as Promise<CallToolResult>;
    const [a, b] = [await call(), await call()];
    expect(a.structuredContent).to.deep.include({ run: 'once-1', status: 'ready' });
    expect(b.structuredContent).to.deep.equal(a.structuredContent);
    expect(getStack().fake.requests).to.have.length(1);
  });

  it('answers arguments the schema refuses as a tool error, and an unknown tool as invalid params', async () => {
    const me = await signedIn('mcp-args');
    await createTask(me.api, 'default', 'greet');
    const client = await mcpClient(me.sessionId);
    const bad = (await client.callTool({ name: 'greet', arguments: { text: 3 } })) as CallToolResult;
    expect(bad.isError).to.equal(true);
    expect((bad.content[0] as { text: string }).text).to.match(/^invalid arguments: .*text/);
    let err: unknown;
    try {
      await client.callTool({ name: 'nope', arguments: {} });
    } catch (e) {
      err = e;
    }
    expect(err).to.have.property('code', -32602);
    expect(getStack().fake.requests).to.have.length(0);
  });

  it('uses a task\'s own description and input_schema (checked when saved, in both variants) for its tool', async () => {
    const me = await signedIn('mcp-declared');
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'], additionalProperties: false };
    const b = await me.api.put('/api/tasks/~/default/count', { runner: 'openai', openai: { prompt: 'Count to {{ n }}', model: 'test-model' }, settings: { key: 'sk-test-key-0123456789abcdef' }, description: 'Counts', input_schema: schema });
    expect(b.status, b.text).to.equal(201);
    expect(b.body).to.deep.include({ description: 'Counts', input_schema: schema });
    const bad = await me.api.put('/api/tasks/~/default/bad', { provider: 'openai', prompt: 'x', model: 'test-model', settings: { key: 'sk-test-key-0123456789abcdef' }, input_schema: { type: 'object', properties: { n: { type: 'nope' } } } });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.message).to.match(/^input_schema: not a JSON Schema 2020-12/);
    const notObject = await me.api.put(`/api/profiles/~/default/tasks/bad`, { runner: 'openai', openai: { prompt: 'x', model: getStack().config.VARIANT_A_MODEL }, settings: { key: 'sk-test-key-0123456789abcdef' }, input_schema: { type: 'string' } });
    expect(notObject.status).to.equal(400);
    expect(notObject.body.error.message).to.match(/^input_schema: .*object/);
    const a = await me.api.put(`/api/profiles/~/default/tasks/plain`, { runner: 'openai', openai: { prompt: 'x', model: getStack().config.VARIANT_A_MODEL }, settings: { key: 'sk-test-key-0123456789abcdef' } });
    expect(a.body).to.not.have.any.keys('description', 'input_schema');
    getStack().fake.script(() => openaiText('1 2 3'));
    const client = await mcpClient(me.sessionId);
    const { tools } = await client.listTools();
    const count = tools.find((t) => t.name === 'count')!;
    expect(count.description).to.equal('Counts');
    expect(count.inputSchema).to.deep.equal(schema);
    const refused = (await client.callTool({ name: 'count', arguments: { n: 0 } })) as CallToolResult;
    expect(refused.isError).to.equal(true);
    const done = (await client.callTool({ name: 'count', arguments: { n: 3 } })) as CallToolResult;
    expect(done.content).to.deep.equal([{ type: 'text', text: '1 2 3' }]);
  });
});
