import { expect } from 'chai';
import { createMcpTasks } from '../../src/mcp/tasks';
import { McpCallFailed } from '../../src/mcp/errors';
import { everythingServer } from '../helpers/mcp-everything';
import { testMcpOptions } from './options';

describe('MCP tasks (src/mcp/tasks.ts) against server-everything', function () {
  this.timeout(30_000);

  it('starts a task-required tool as a task, follows it from sessions resumed by id, and reads its report', async () => {
    const server = { url: (await everythingServer()).url };
    const tasks = createMcpTasks(testMcpOptions());
    const started = await tasks.start(server, { name: 'simulate-research-query', arguments: { topic: 'durable runs' } });
    expect(started.sessionId).to.be.a('string');
    expect(started.status).to.equal('working');
    expect(started.pollIntervalMs).to.be.a('number');
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const state = await tasks.get(server, started);
      seen.add(state.status);
      if (state.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect([...seen]).to.include('completed');
    const result = await tasks.result(server, started);
    expect(result.isError ?? false).to.equal(false);
    expect(JSON.stringify(result.content)).to.include('durable runs');
  });

  it('cancels a task, and says a session the server does not know is lost', async () => {
    const server = { url: (await everythingServer()).url };
    const tasks = createMcpTasks(testMcpOptions());
    const started = await tasks.start(server, { name: 'simulate-research-query', arguments: { topic: 'cancelled' } });
    await tasks.cancel(server, started);
    expect((await tasks.get(server, started)).status).to.equal('cancelled');
    const lost = await tasks.get(server, { ...started, sessionId: 'no-such-session' }).then(() => undefined, (err: unknown) => err);
    expect(lost).to.be.instanceOf(McpCallFailed);
  });
});
