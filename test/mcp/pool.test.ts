import { expect } from 'chai';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { everythingServer, restartEverythingServer } from '../helpers/mcp-everything';
import { hostileServer, TOOLS, type HostileServer } from '../helpers/mcp-hostile-server';
import { testMcpOptions } from './options';

describe('MCP session pool', () => {
  let server: HostileServer;
  let pool: McpSessionPool;
  before(async () => {
    server = await hostileServer();
  });
  beforeEach(() => {
    pool = createMcpSessionPool(testMcpOptions());
  });
  afterEach(() => pool.close());
  const initializations = () => server.stats.initializations['/mcp'] ?? 0;
  const terminations = () => server.stats.terminations['/mcp'] ?? 0;
  const target = (key: string, headers: Record<string, string> = { Authorization: 'Bearer one' }) => ({ key, url: server.url('/mcp'), headers });

  it('opens one session for many calls to one install, concurrent or one after another', async () => {
    const before = initializations();
    const calls = server.stats.calls[TOOLS.count] ?? 0;
    await Promise.all(Array.from({ length: 5 }, () => pool.callTool(target('reuse'), { name: TOOLS.count })));
    for (let i = 0; i < 5; i++) await pool.callTool(target('reuse'), { name: TOOLS.count });
    expect(initializations()).to.equal(before + 1);
    expect(server.stats.calls[TOOLS.count]).to.equal(calls + 10);
    expect(pool.size).to.equal(1);
  });

  it('opens a session per install', async () => {
    const before = initializations();
    await pool.callTool(target('a'), { name: TOOLS.count });
    await pool.callTool(target('b'), { name: TOOLS.count });
    await pool.callTool(target('a'), { name: TOOLS.count });
    expect(initializations()).to.equal(before + 2);
  });

  it('opens a new session when the server forgot the old one (404), and runs the call once', async () => {
    await pool.callTool(target('forgotten'), { name: TOOLS.count });
    const before = initializations();
    const calls = server.stats.calls[TOOLS.count] ?? 0;
    await server.forgetSessions();
    const result = await pool.callTool(target('forgotten'), { name: TOOLS.count });
    expect(result.content[0]).to.have.property('text').that.matches(/^call \d+$/);
    expect(initializations()).to.equal(before + 1);
    expect(server.stats.calls[TOOLS.count]).to.equal(calls + 1);
  });

  it('opens a new session after server-everything restarted (it answers 400 to the old session)', async () => {
    const everything = { key: 'everything-restarted', url: (await everythingServer()).url };
    await pool.callTool(everything, { name: 'echo', arguments: { message: 'before' } });
    await restartEverythingServer();
    const result = await pool.callTool(everything, { name: 'echo', arguments: { message: 'after' } });
    expect(result.content).to.deep.equal([{ type: 'text', text: 'Echo: after' }]);
  });

  it('opens a new session when the install changed its headers, and closes the old one', async () => {
    await pool.callTool(target('changed', { Authorization: 'Bearer one' }), { name: TOOLS.count });
    const opened = initializations();
    const ended = terminations();
    await pool.callTool(target('changed', { Authorization: 'Bearer two' }), { name: TOOLS.count });
    expect(initializations()).to.equal(opened + 1);
    await waitUntil(() => terminations() > ended);
    expect(pool.size).to.equal(1);
  });

  it('opens a new session after a connection lost mid-call', async () => {
    await pool.callTool(target('lost'), { name: TOOLS.count });
    const before = initializations();
    await pool.callTool(target('lost'), { name: TOOLS.diesMidCall }).catch(() => undefined);
    await pool.callTool(target('lost'), { name: TOOLS.count });
    expect(initializations()).to.equal(before + 1);
  });

  it('keeps the session after a timeout (the session is not at fault)', async () => {
    await pool.callTool(target('slow'), { name: TOOLS.count });
    const before = initializations();
    await pool.callTool(target('slow'), { name: TOOLS.hangs }, { timeoutMs: 100 }).catch(() => undefined);
    await pool.callTool(target('slow'), { name: TOOLS.count });
    expect(initializations()).to.equal(before);
  });

  it('keeps at most maxSessions, closing the least recently used', async () => {
    const small = createMcpSessionPool({ ...testMcpOptions(), maxSessions: 2 });
    try {
      const ended = terminations();
      for (const key of ['x', 'y', 'z']) await small.callTool(target(key), { name: TOOLS.count });
      expect(small.size).to.equal(2);
      await waitUntil(() => terminations() > ended);
      const before = initializations();
      await small.callTool(target('z'), { name: TOOLS.count });
      await small.callTool(target('y'), { name: TOOLS.count });
      expect(initializations(), 'y and z kept').to.equal(before);
      await small.callTool(target('x'), { name: TOOLS.count });
      expect(initializations(), 'x was closed').to.equal(before + 1);
    } finally {
      await small.close();
    }
  });

  it('refuses calls once closed', async () => {
    await pool.close();
    let error: unknown;
    await pool.callTool(target('closed'), { name: TOOLS.count }).catch((err) => (error = err));
    expect(error).to.be.instanceOf(Error).with.property('message').that.matches(/closed/);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}
