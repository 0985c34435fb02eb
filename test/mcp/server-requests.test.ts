import { expect } from 'chai';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { discoverTools } from '../../src/mcp/discover';
import { everythingServer } from '../helpers/mcp-everything';
import { testMcpOptions } from './options';

/**
 * The server's requests during a call (`elicitation/create`, `sampling/createMessage`) reach that call's handlers,
 * against the real server-everything, whose `trigger-*` tools exist only for a client that declares the capability.
 */
describe('MCP server requests during a call', () => {
  let pool: McpSessionPool;
  let url: string;
  before(async () => {
    ({ url } = await everythingServer());
  });
  beforeEach(() => {
    pool = createMcpSessionPool(testMcpOptions());
  });
  afterEach(() => pool.close());
  const target = (key: string) => ({ key, url });
  const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((c) => c.text ?? '').join('\n');

  it('lists the elicitation and sampling tools: the client declares both capabilities', async () => {
    const found = await discoverTools({ url }, testMcpOptions());
    const names = found.tools.map((t) => t.name);
    expect(names).to.include.members(['trigger-elicitation-request', 'trigger-sampling-request']);
  });

  it("hands the server's elicitation to the call that caused it, and the server gets the answer", async () => {
    const asked: string[] = [];
    const result = await pool.callTool(target('elicit'), { name: 'trigger-elicitation-request' }, {
      onElicit: async (params) => {
        asked.push(params.message);
        return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
      },
    });
    expect(asked).to.have.length(1);
    expect(text(result)).to.include('Name: Ada Lovelace');
  });

  it('declines an elicitation when the call has no handler for it', async () => {
    const result = await pool.callTool(target('no-elicit'), { name: 'trigger-elicitation-request' });
    expect(text(result).toLowerCase()).to.include('declin');
  });

  it("hands the server's sampling request to the call that caused it, and the server gets the model's answer", async () => {
    const prompts: unknown[] = [];
    const result = await pool.callTool(target('sample'), { name: 'trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 20 } }, {
      onSample: async (params) => {
        prompts.push(params.messages[0]?.content);
        return { role: 'assistant', content: { type: 'text', text: 'hi from the model' }, model: 'fake-model' };
      },
    });
    expect(JSON.stringify(prompts)).to.include('say hi');
    expect(text(result)).to.include('hi from the model');
  });

  it('refuses a sampling request with an MCP error when the call has no handler for it', async () => {
    const result = await pool.callTool(target('no-sample'), { name: 'trigger-sampling-request', arguments: { prompt: 'say hi' } });
    expect(result.isError).to.equal(true);
    expect(text(result)).to.include('sampling is not offered');
  });

  it('keeps two calls on one session apart: each hears only its own request', async () => {
    const heard: string[] = [];
    const call = (who: string) =>
      pool.callTool(target('shared'), { name: 'trigger-sampling-request', arguments: { prompt: who } }, {
        onSample: async (params) => {
          heard.push(`${who}:${JSON.stringify(params.messages[0]?.content)}`);
          return { role: 'assistant', content: { type: 'text', text: `answer for ${who}` }, model: 'fake-model' };
        },
      });
    const [a, b] = await Promise.all([call('first'), call('second')]);
    expect(text(a)).to.include('answer for first');
    expect(text(b)).to.include('answer for second');
    expect(heard.filter((h) => h.startsWith('first:'))[0]).to.include('first');
    expect(heard.filter((h) => h.startsWith('second:'))[0]).to.include('second');
  });
});
