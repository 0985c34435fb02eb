import { expect } from 'chai';
import { McpCallFailed } from '../../src/mcp/errors';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { hostileServer, TOOLS, type HostileServer } from '../helpers/mcp-hostile-server';
import { testMcpOptions } from './options';

async function failure(promise: Promise<unknown>): Promise<McpCallFailed> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).to.be.instanceOf(McpCallFailed);
  return err as McpCallFailed;
}

/**
 * A call's answer stream that ends or breaks before its answer (Streamable HTTP "resumability"): resumed with a GET
 * carrying `Last-Event-ID` when the server gave its events ids, otherwise the answer is lost at once (no wait for
 * MCP_CALL_TIMEOUT_MS, which is a minute here).
 */
describe('MCP tool calls whose answer stream ends early', () => {
  let server: HostileServer;
  let pool: McpSessionPool;
  before(async () => {
    server = await hostileServer();
  });
  beforeEach(() => {
    pool = createMcpSessionPool(testMcpOptions());
  });
  afterEach(() => pool.close());
  const target = { key: 'resume', url: '' };
  beforeEach(() => (target.url = server.url('/mcp')));

  it('resumes a stream that broke after an event with an id, with a GET carrying Last-Event-ID, and takes the answer from it', async () => {
    const calls = server.stats.calls[TOOLS.breaksResumable] ?? 0;
    const resumes = server.stats.resumes[TOOLS.breaksResumable] ?? 0;
    const result = await pool.callTool(target, { name: TOOLS.breaksResumable });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'resumed' }]);
    expect((server.stats.calls[TOOLS.breaksResumable] ?? 0) - calls, 'the call was sent once').to.equal(1);
    expect((server.stats.resumes[TOOLS.breaksResumable] ?? 0) - resumes).to.equal(1);
  });

  it('says the call may or may not have run when the GET that would resume its stream is refused', async () => {
    const resumes = server.stats.resumes[TOOLS.breaksResumeRefused] ?? 0;
    const err = await failure(pool.callTool(target, { name: TOOLS.breaksResumeRefused }));
    expect(err.reason, err.message).to.equal('lost');
    expect(err.reachedServer).to.equal(true);
    expect(err.message).to.match(/could not be resumed \(the server answered 405\)/);
    expect((server.stats.resumes[TOOLS.breaksResumeRefused] ?? 0) - resumes, 'resuming was tried').to.equal(1);
  });

  it('says the call may or may not have run when the server ends its stream without an answer and without event ids', async () => {
    const err = await failure(pool.callTool(target, { name: TOOLS.endsUnanswered }));
    expect(err.reason, err.message).to.equal('lost');
    expect(err.reachedServer).to.equal(true);
    expect(err.message).to.match(/ended the answer stream without an answer/);
  });
});
