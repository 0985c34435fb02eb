import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { IdleTimer } from '../../src/mcp/idle-timer';
import { McpCallFailed } from '../../src/mcp/errors';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { everythingServer } from '../helpers/mcp-everything';
import { testMcpOptions } from './options';

/** MCP_CALL_TIMEOUT_MS counts the server's silence, not a person's: it pauses while the server's question waits. */
describe('MCP call time-out while a person is asked', () => {
  describe('the idle timer', () => {
    it('fires once the time passes without a sign of life', async () => {
      let fired = 0;
      new IdleTimer(30, () => fired++);
      await sleep(120);
      expect(fired).to.equal(1);
    });

    it('does not fire while paused, and gives the full time again once the pause ends', async () => {
      let fired = 0;
      const timer = new IdleTimer(60, () => fired++);
      const resume = timer.pause();
      await sleep(150);
      expect(fired, 'while paused').to.equal(0);
      resume();
      resume();
      await sleep(20);
      expect(fired, 'just after the pause').to.equal(0);
      await sleep(150);
      expect(fired, 'after the full time').to.equal(1);
    });

    it('stays paused while any of two overlapping pauses lasts', async () => {
      let fired = 0;
      const timer = new IdleTimer(40, () => fired++);
      const first = timer.pause();
      const second = timer.pause();
      first();
      await sleep(120);
      expect(fired).to.equal(0);
      second();
      await sleep(120);
      expect(fired).to.equal(1);
    });

    it('never fires once stopped', async () => {
      let fired = 0;
      const timer = new IdleTimer(30, () => fired++);
      timer.stop();
      timer.pause()();
      timer.restart();
      await sleep(100);
      expect(fired).to.equal(0);
    });
  });

  describe('a call whose server asks a person (server-everything)', () => {
    let pool: McpSessionPool;
    let url: string;
    before(async () => {
      ({ url } = await everythingServer());
    });
    beforeEach(() => {
      pool = createMcpSessionPool(testMcpOptions());
    });
    afterEach(() => pool.close());
    const text = (result: { content: Array<{ type: string; text?: string }> }) => result.content.map((c) => c.text ?? '').join('\n');

    it('waits for an answer that takes longer than the call time-out, and the server gets it', async () => {
      const result = await pool.callTool({ key: 'slow-person', url }, { name: 'trigger-elicitation-request' }, {
        timeoutMs: 300,
        onElicit: async () => {
          await sleep(1_000);
          return { action: 'accept', content: { name: 'Grace Hopper' } };
        },
      });
      expect(text(result)).to.include('Name: Grace Hopper');
    });

    it('still ends a call whose server stays silent past the time-out', async () => {
      const err = await pool.callTool({ key: 'silent', url }, { name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 1 } }, { timeoutMs: 300 }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(McpCallFailed);
      expect((err as McpCallFailed).reason).to.equal('timeout');
      expect((err as Error).message).to.include('no answer within 300 ms (MCP_CALL_TIMEOUT_MS)');
    });

    it('hands the question a signal that ends when the call ends', async () => {
      let signal: AbortSignal | undefined;
      const controller = new AbortController();
      const call = pool.callTool({ key: 'ended', url }, { name: 'trigger-elicitation-request' }, {
        signal: controller.signal,
        onElicit: async (_params, s) => {
          signal = s;
          controller.abort();
          await new Promise((resolve) => s.addEventListener('abort', resolve, { once: true }));
          return { action: 'cancel' };
        },
      });
      const err = await call.catch((e: unknown) => e);
      expect(err).to.be.instanceOf(McpCallFailed);
      expect(signal?.aborted).to.equal(true);
    });
  });
});
