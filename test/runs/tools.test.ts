import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { anthropicText, anthropicToolUse, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { compileWat, installServlet } from '../helpers/servlets';
import { createTask, historyText, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { runWorkflowId } from '../../src/temporal/ids';

const install = installServlet;

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');

describe('runs: tools from the profile\'s servlets', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('lets the OpenAI model call a servlet tool, feeds its result back, and records the exchange', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    await install(api, username, 'greeter', 'hello', { greeting: 'Bonjour' });
    await createTask(api, 'default', 'greet');
    fake.script([
      openaiToolCall([{ id: 'call_1', name: 'hello__greet', arguments: { name: 'Ann' } }]),
      (req) => openaiText(`final: ${toolMessages(req)[0].content}`),
    ]);
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'greet'), { text: 'x' })).body.url);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('final: Bonjour, Ann!');
    const offered = fake.requests[0]!.body.tools;
    expect(offered).to.deep.equal([
      { type: 'function', function: { name: 'hello__greet', description: 'Greets someone by name', parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } },
    ]);
    expect(toolMessages(fake.requests[1]!)[0]).to.deep.include({ tool_call_id: 'call_1', content: 'Bonjour, Ann!' });
    const exchanges = run.results.filter((e: any) => e.exchange).map((e: any) => e.exchange);
    expect(exchanges).to.deep.include({ role: 'assistant', content: JSON.stringify({ tool: 'hello__greet', arguments: { name: 'Ann' } }) });
    expect(exchanges).to.deep.include({ role: 'tool', content: 'Bonjour, Ann!' });
  });

  it('lets the Anthropic model call a servlet tool and answer with its result', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    await install(api, username, 'greeter', 'g');
    await createTask(api, 'default', 'claude', { runner: 'anthropic' });
    fake.script([
      anthropicToolUse([{ id: 'toolu_1', name: 'g__greet', input: { name: 'Bo' } }], 'let me greet'),
      (req) => {
        const last = req.body.messages.at(-1);
        return anthropicText(`final: ${last.content[0].content[0].text}`);
      },
    ]);
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'claude'), { text: 'x' })).body.url);
    expect(run.results.at(-1).lastMessage.content).to.equal('final: Hello, Bo!');
    expect(fake.requests[0]!.body.tools[0]).to.deep.include({ name: 'g__greet', description: 'Greets someone by name' });
    const second = fake.requests[1]!.body.messages;
    expect(second[1]).to.deep.equal({ role: 'assistant', content: [{ type: 'text', text: 'let me greet' }, { type: 'tool_use', id: 'toolu_1', name: 'g__greet', input: { name: 'Bo' } }] });
    expect(second[2].content[0]).to.deep.include({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: false });
  });

  it('offers a tool whose JSON Schema uses $-keys to the model exactly as the servlet described it', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { when: { $ref: '#/$defs/date' } }, $defs: { date: { type: 'string', format: 'date' } } };
    const json = JSON.stringify({ tools: [{ name: 'plan', description: 'Plans a day', inputSchema: schema }] }).replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    const module = await compileWat(`(module
  ;; @prelude
  (func (export "describe") (result i32) (call $out_begin) (call $emit (string "${json}")) (call $out_end) (i32.const 0))
  (func (export "call") (result i32) (call $out_begin) (call $emit (string "{\\"content\\":[{\\"type\\":\\"text\\",\\"text\\":\\"ok\\"}]}")) (call $out_end) (i32.const 0)))`);
    const put = await api.request('PUT', '/api/servlets/~/planner', undefined, { headers: { 'content-type': 'application/wasm' }, raw: module });
    expect(put.status, put.text).to.equal(201);
    expect((await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/planner`, name: 'planner' })).status).to.equal(201);
    await createTask(api, 'default', 'plan');
    await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'plan'), {})).body.url);
    expect(fake.requests[0]!.body.tools[0].function.parameters).to.deep.equal(schema);
  });

  it('maps image content to what each provider accepts', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    await install(api, username, 'image', 'img');
    await createTask(api, 'default', 'pic-openai');
    await createTask(api, 'default', 'pic-claude', { runner: 'anthropic' });
    fake.script([openaiToolCall([{ id: 'c1', name: 'img__pixel', arguments: {} }]), openaiText('seen')]);
    await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'pic-openai'), {})).body.url);
    const userImage = fake.requests[1]!.body.messages.at(-1);
    expect(userImage.role).to.equal('user');
    expect(userImage.content[1].type).to.equal('image_url');
    expect(userImage.content[1].image_url.url).to.match(/^data:image\/png;base64,/);
    fake.reset();
    fake.script([anthropicToolUse([{ id: 't1', name: 'img__pixel', input: {} }]), anthropicText('seen')]);
    await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'pic-claude'), {})).body.url);
    const block = fake.requests[1]!.body.messages.at(-1).content[0].content.find((c: any) => c.type === 'image');
    expect(block, 'an image block in the tool_result').to.not.equal(undefined);
    expect(block.source).to.include({ type: 'base64', media_type: 'image/png' });
  });

  it('gives the model a tool error it can recover from when a servlet loops forever, and the worker stays healthy', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    await install(api, username, 'infinite-loop', 'spin');
    await install(api, username, 'greeter', 'hello');
    await createTask(api, 'default', 'spin');
    fake.script([
      (req) => openaiToolCall([{ id: 'c1', name: req.body.tools.find((t: any) => t.function.name.startsWith('spin__')).function.name, arguments: {} }]),
      (req) => openaiText(`recovered from: ${toolMessages(req)[0].content}`),
    ]);
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'spin'), {})).body.url, 60_000);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^recovered from: ERROR: servlet call timed out/);
    fake.script([openaiToolCall([{ name: 'hello__greet', arguments: { name: 'again' } }]), (req) => openaiText(toolMessages(req)[0].content)]);
    const after = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'spin'), {})).body.url);
    expect(after.results.at(-1).lastMessage.content).to.equal('Hello, again!');
  });

  it('keeps an install\'s configuration out of workflow history, logs and results', async () => {
    const { api, username } = await signedIn();
    const { fake, logs, temporal } = getStack();
    const secret = 'cfg-secret-4b1d2c3e9f';
    await install(api, username, 'greeter', 'sec', { greeting: 'Hi', token: secret });
    await createTask(api, 'default', 'sec');
    fake.script([openaiToolCall([{ name: 'sec__greet', arguments: { name: 'Z' } }]), openaiText('done')]);
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'sec'), {}, { 'run-id': 'sec1' })).body.url);
    expect(run.status).to.equal('ready');
    const history = await historyText(temporal, runWorkflowId({ owner: username, profile: 'default', task: 'sec', run: 'sec1' }));
    expect(history).to.contain('Hi, Z!');
    expect(history).not.to.contain(secret);
    expect(JSON.stringify(run)).not.to.contain(secret);
    expect(logs.text()).not.to.contain(secret);
    expect(JSON.stringify(fake.requests)).not.to.contain(secret);
  });
});
