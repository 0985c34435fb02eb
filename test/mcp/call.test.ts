import { expect } from 'chai';
import { McpCallFailed, type McpFailureReason } from '../../src/mcp/errors';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { everythingServer } from '../helpers/mcp-everything';
import { hostileServer, TINY_PNG, TOOLS, type HostileServer } from '../helpers/mcp-hostile-server';
import { testMcpOptions } from './options';

const SECRET = 'Bearer sk-call-secret-0123456789';

async function failure(promise: Promise<unknown>): Promise<McpCallFailed> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(McpCallFailed);
    return err as McpCallFailed;
  }
  throw new Error('expected McpCallFailed, but the call succeeded');
}

function expectFailure(err: McpCallFailed, reason: McpFailureReason, reachedServer: boolean) {
  expect(err.reason, err.message).to.equal(reason);
  expect(err.reachedServer, err.message).to.equal(reachedServer);
  expect(err.message).not.to.include('sk-call-secret-0123456789');
}

describe('MCP tool calls (the session pool)', () => {
  let pool: McpSessionPool;
  beforeEach(() => {
    pool = createMcpSessionPool(testMcpOptions());
  });
  afterEach(() => pool.close());

  describe('against server-everything', () => {
    let target: { key: string; url: string };
    before(async () => {
      target = { key: 'everything', url: (await everythingServer()).url };
    });

    it('calls echo and returns its text', async () => {
      const result = await pool.callTool(target, { name: 'echo', arguments: { message: 'hello there' } });
      expect(result).to.deep.equal({ content: [{ type: 'text', text: 'Echo: hello there' }] });
    });

    it('calls get-sum with numbers', async () => {
      const result = await pool.callTool(target, { name: 'get-sum', arguments: { a: 2, b: 40 } });
      expect(result.content[0]).to.have.property('text').that.matches(/\b42\b/);
    });

    it('keeps the image of get-tiny-image as an image item', async () => {
      const result = await pool.callTool(target, { name: 'get-tiny-image' });
      const image = result.content.find((c) => c.type === 'image');
      expect(image).to.include({ type: 'image', mimeType: 'image/png' });
      expect(Buffer.from((image as { data: string }).data, 'base64').subarray(1, 4).toString()).to.equal('PNG');
    });

    it('shows the structured content of get-structured-content once, as JSON text (its text item mirrors it)', async () => {
      const result = await pool.callTool(target, { name: 'get-structured-content', arguments: { location: 'Chicago' } });
      expect(result.content).to.have.length(1);
      expect(JSON.parse((result.content[0] as { text: string }).text)).to.deep.equal({ temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 });
    });

    it('reports the progress of trigger-long-running-operation', async () => {
      const seen: Array<[number, number | undefined]> = [];
      const result = await pool.callTool(target, { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, { onProgress: (p, total) => seen.push([p, total]) });
      expect(seen).to.deep.equal([[1, 3], [2, 3], [3, 3]]);
      expect(result.content[0]).to.have.property('text').that.matches(/completed/);
    });

    it('restarts the call timeout at each progress notification', async () => {
      // 12 steps of 100 ms: far longer than the timeout in all, each step well within it.
      let steps = 0;
      const result = await pool.callTool(target, { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 12 } }, { timeoutMs: 600, onProgress: () => steps++ });
      expect(steps).to.equal(12);
      expect(result.content[0]).to.have.property('text').that.matches(/completed/);
    });

    it('keeps isError of a tool error result (McpServer answers an unknown tool so)', async () => {
      const result = await pool.callTool(target, { name: 'no-such-tool' });
      expect(result.isError).to.equal(true);
      expect(result.content[0]).to.have.property('text').that.matches(/no-such-tool not found/);
    });
  });

  describe('against the hostile server', () => {
    let server: HostileServer;
    let target: { key: string; url: string; headers: Record<string, string> };
    before(async () => {
      server = await hostileServer();
    });
    beforeEach(function () {
      target = { key: `hostile-${this.currentTest!.title}`, url: server.url('/mcp'), headers: { Authorization: SECRET } };
    });
    const calls = (name: string) => server.stats.calls[name] ?? 0;

    it('delivers progress and the server log messages sent for that call', async () => {
      const progress: Array<[number, number | undefined, string | undefined]> = [];
      const logs: Array<[string, string]> = [];
      const result = await pool.callTool(target, { name: TOOLS.progress }, { onProgress: (p, t, m) => progress.push([p, t, m]), onLog: (level, text) => logs.push([level, text]) });
      expect(result.content).to.deep.equal([{ type: 'text', text: 'done' }]);
      expect(progress).to.deep.equal([[1, 3, 'step 1'], [2, 3, 'step 2'], [3, 3, 'step 3']]);
      expect(logs).to.deep.equal([['info', 'hostile: working on step 1'], ['info', 'hostile: working on step 2'], ['warning', 'hostile: working on step 3']]);
    });

    it('calls a server that answers in plain JSON rather than event streams', async () => {
      const result = await pool.callTool({ ...target, url: server.url('/json') }, { name: TOOLS.mixed });
      expect(result.content[0]).to.deep.equal({ type: 'text', text: 'plain text' });
    });

    it('sends notifications/cancelled when the caller aborts, and says the tool may have run', async () => {
      const before = server.stats.cancelled[TOOLS.waitForCancel] ?? 0;
      const controller = new AbortController();
      const started = calls(TOOLS.waitForCancel);
      const call = pool.callTool(target, { name: TOOLS.waitForCancel }, { signal: controller.signal });
      await waitUntil(() => calls(TOOLS.waitForCancel) > started);
      controller.abort();
      expectFailure(await failure(call), 'cancelled', true);
      await waitUntil(() => (server.stats.cancelled[TOOLS.waitForCancel] ?? 0) > before);
    });

    it('sends nothing for a call aborted before it starts', async () => {
      const before = calls(TOOLS.count);
      const controller = new AbortController();
      controller.abort();
      expectFailure(await failure(pool.callTool(target, { name: TOOLS.count }, { signal: controller.signal })), 'cancelled', false);
      expect(calls(TOOLS.count)).to.equal(before);
    });

    it('times out a call that gets no answer, and tells the server it is cancelled', async () => {
      const before = server.stats.cancelled[TOOLS.hangs] ?? 0;
      const err = await failure(pool.callTool(target, { name: TOOLS.hangs }, { timeoutMs: 300 }));
      expectFailure(err, 'timeout', true);
      expect(err.message).to.match(/no answer within 300 ms/);
      await waitUntil(() => (server.stats.cancelled[TOOLS.hangs] ?? 0) > before);
    });

    it('says a call whose connection died mid-answer may have run (reachedServer: true), and ran it once', async () => {
      const before = calls(TOOLS.diesMidCall);
      expectFailure(await failure(pool.callTool(target, { name: TOOLS.diesMidCall })), 'lost', true);
      expect(calls(TOOLS.diesMidCall)).to.equal(before + 1);
    });

    it('says a call whose connection died before any answer may have run', async () => {
      const before = calls(TOOLS.diesBeforeAnswer);
      expectFailure(await failure(pool.callTool(target, { name: TOOLS.diesBeforeAnswer })), 'lost', true);
      expect(calls(TOOLS.diesBeforeAnswer)).to.equal(before + 1);
    });

    it('says an answer that is not JSON is not MCP, and that the tool may have run', async () => {
      expectFailure(await failure(pool.callTool(target, { name: TOOLS.garbage })), 'not_mcp', true);
      expectFailure(await failure(pool.callTool(target, { name: TOOLS.garbageEvent })), 'not_mcp', true);
    });

    it('cuts a 50 MB answer at MCP_MAX_RESPONSE_BYTES', async () => {
      const err = await failure(pool.callTool(target, { name: TOOLS.huge }));
      expectFailure(err, 'too_large', true);
      expect(err.message).to.match(/over the 4194304-byte limit/);
    });

    it('says a JSON-RPC error answer is a server error, after the request reached the server', async () => {
      const err = await failure(pool.callTool({ ...target, url: server.url('/many') }, { name: 'no-such-tool' }));
      expectFailure(err, 'server_error', true);
      expect(err.message).to.match(/Unknown tool: no-such-tool/);
    });

    it('keeps header values out of an error message even when the server quotes them', async () => {
      const err = await failure(pool.callTool({ ...target, url: server.url('/many') }, { name: 'echo-auth' }));
      expectFailure(err, 'server_error', true);
      expect(err.message).to.match(/bad token: \[redacted\]/);
    });

    it('ends, as never sent, a call cancelled while its session is still opening', async () => {
      const controller = new AbortController();
      const call = pool.callTool({ ...target, url: server.url('/hang') }, { name: TOOLS.count }, { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      expectFailure(await failure(call), 'cancelled', false);
    });

    it('never sends a call whose header value HTTP cannot carry', async () => {
      const err = await failure(pool.callTool({ ...target, headers: { Authorization: 'Bearer sk-call-secret-0123456789\n' } }, { name: TOOLS.count }));
      expectFailure(err, 'bad_headers', false);
    });

    it('says a refused connection never reached the server', async () => {
      const err = await failure(pool.callTool({ ...target, url: server.closedUrl }, { name: TOOLS.count }));
      expectFailure(err, 'refused', false);
    });

    it('says a 401 never ran the tool, without the header value the server echoed', async () => {
      expectFailure(await failure(pool.callTool({ ...target, url: server.url('/401') }, { name: TOOLS.count })), 'unauthorized', false);
    });

    it('refuses, through the network guard, a server MCP_ALLOWLIST does not open, before connecting', async () => {
      const guarded = createMcpSessionPool(testMcpOptions({ MCP_ALLOWLIST: [] }));
      try {
        const before = server.stats.initializations['/mcp'] ?? 0;
        expectFailure(await failure(guarded.callTool(target, { name: TOOLS.count })), 'guard', false);
        expect(server.stats.initializations['/mcp'] ?? 0).to.equal(before);
      } finally {
        await guarded.close();
      }
    });

    it('converts every kind of content: image kept, audio and blobs as placeholders, resources inline, structured content as JSON', async () => {
      const result = await pool.callTool(target, { name: TOOLS.mixed });
      expect(result.content).to.deep.equal([
        { type: 'text', text: 'plain text' },
        { type: 'image', data: TINY_PNG, mimeType: 'image/png' },
        { type: 'text', text: '[audio: audio/wav, 2.9 KiB, not shown]' },
        { type: 'text', text: '[resource link: notes.txt <file:///notes.txt> (text/plain) — the notes]' },
        { type: 'text', text: '[resource <file:///inline.txt> (text/plain)]\ninline resource text' },
        { type: 'text', text: '[resource <file:///blob.bin>: application/octet-stream, 900 bytes, not shown]' },
        { type: 'text', text: '{"answer":42}' },
      ]);
    });
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}
