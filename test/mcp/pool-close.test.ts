import { expect } from 'chai';
import { createMcpSessionPool } from '../../src/mcp/pool';
import { hostileServer, TOOLS } from '../helpers/mcp-hostile-server';
import { testMcpOptions } from './options';

describe('MCP session pool: closing', () => {
  it('ends its sessions with DELETE and sends no notifications/cancelled for requests that were answered long ago', async () => {
    const server = await hostileServer();
    const pool = createMcpSessionPool(testMcpOptions());
    const notices = server.stats.cancelNotices['/mcp'] ?? 0;
    const terminations = server.stats.terminations['/mcp'] ?? 0;
    await pool.callTool({ key: 'closing', url: server.url('/mcp') }, { name: TOOLS.count });
    await pool.close();
    expect((server.stats.terminations['/mcp'] ?? 0) - terminations, 'the session ended').to.equal(1);
    // Its initialize was answered before the call: closing the pool is no cancellation of it.
    expect((server.stats.cancelNotices['/mcp'] ?? 0) - notices).to.equal(0);
  });
});
