import { expect } from 'chai';
import { discoverTools } from '../../src/mcp/discover';
import { McpUnreachable, type McpFailureReason } from '../../src/mcp/errors';
import { everythingServer } from '../helpers/mcp-everything';
import { hostileServer } from '../helpers/mcp-hostile-server';
import { testMcpOptions } from './options';

const SECRET = 'Bearer sk-test-0123456789abcdef';

async function failure(promise: Promise<unknown>): Promise<McpUnreachable> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(McpUnreachable);
    return err as McpUnreachable;
  }
  throw new Error('expected McpUnreachable, but discovery succeeded');
}

async function expectReason(url: string, reason: McpFailureReason, message: RegExp, options = testMcpOptions()) {
  const err = await failure(discoverTools({ url, headers: { Authorization: SECRET } }, options));
  expect(err.reason, err.message).to.equal(reason);
  expect(err.message).to.match(message);
  expect(err.message).not.to.include('sk-test-0123456789abcdef');
  return err;
}

describe('MCP discovery (discoverTools)', () => {
  describe('against server-everything', () => {
    it('lists its tools with their schemas and annotations, and names the server and protocol', async () => {
      const { url } = await everythingServer();
      const found = await discoverTools({ url }, testMcpOptions());
      const names = found.tools.map((t) => t.name);
      expect(names).to.include.members(['echo', 'get-sum', 'get-tiny-image', 'get-structured-content', 'trigger-long-running-operation']);
      const echo = found.tools.find((t) => t.name === 'echo')!;
      expect(echo.description).to.be.a('string').with.length.greaterThan(0);
      expect(echo.inputSchema).to.have.property('type', 'object');
      expect(echo.inputSchema).to.have.nested.property('properties.message');
      for (const tool of found.tools) expect(tool.annotations, tool.name).to.be.an('object');
      expect(found.tools.find((t) => t.name === 'get-structured-content')!.outputSchema).to.be.an('object');
      expect(found.serverInfo.name).to.be.a('string').with.length.greaterThan(0);
      expect(found.protocolVersion).to.match(/^\d{4}-\d{2}-\d{2}$/);
    });
  });

  describe('against the hostile server', () => {
    it('follows every page of tools/list (500 tools, 50 a page)', async () => {
      const server = await hostileServer();
      const found = await discoverTools({ url: server.url('/many') }, testMcpOptions());
      expect(found.tools).to.have.length(500);
      expect(new Set(found.tools.map((t) => t.name)).size).to.equal(500);
      expect(found.tools[499]!.name).to.equal('tool-499');
    });

    it('keeps the annotations a tool declares', async () => {
      const server = await hostileServer();
      const { tools } = await discoverTools({ url: server.url('/mcp') }, testMcpOptions());
      expect(tools.find((t) => t.name === 'read-only')!.annotations).to.include({ readOnlyHint: true });
      expect(tools.find((t) => t.name === 'destructive')!.annotations).to.include({ destructiveHint: true });
      expect(tools.find((t) => t.name === 'idempotent')!.annotations).to.include({ idempotentHint: true, destructiveHint: false });
    });

    it('closes the session it opened (the server is told with DELETE)', async () => {
      const server = await hostileServer();
      const opened = server.stats.initializations['/mcp'] ?? 0;
      const ended = server.stats.terminations['/mcp'] ?? 0;
      await discoverTools({ url: server.url('/mcp') }, testMcpOptions());
      expect(server.stats.initializations['/mcp']).to.equal(opened + 1);
      expect(server.stats.terminations['/mcp']).to.equal(ended + 1);
    });

    it('says the connection was refused when nothing listens', async () => {
      const server = await hostileServer();
      await expectReason(server.closedUrl, 'refused', /connection refused/);
    });

    it('says the server answered 401, without the header value it echoed back', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/401'), 'unauthorized', /401/);
    });

    it('says the server answered 403', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/403'), 'forbidden', /403/);
    });

    it('says an HTML page is not MCP', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/garbage'), 'not_mcp', /not MCP/);
    });

    it('gives up on a server that never answers after MCP_CONNECT_TIMEOUT_MS', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/hang'), 'timeout', /within 300 ms \(MCP_CONNECT_TIMEOUT_MS\)/, testMcpOptions({ connectTimeoutMs: 300 }));
    });

    it('refuses an answer over MCP_MAX_RESPONSE_BYTES (50 MB sent)', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/huge'), 'too_large', /over the 4194304-byte limit/);
    });

    it('says TLS failed when the server speaks plain HTTP to https://', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/mcp').replace('http://', 'https://'), 'tls', /TLS/);
    });

    it('refuses loopback through the network guard unless MCP_ALLOWLIST names it, before connecting', async () => {
      const server = await hostileServer();
      const before = server.stats.initializations['/mcp'] ?? 0;
      const err = await expectReason(server.url('/mcp').replace('http://', 'https://'), 'guard', /loopback/, testMcpOptions({ MCP_ALLOWLIST: [] }));
      expect(err.message).to.match(/MCP_ALLOWLIST/);
      expect(server.stats.initializations['/mcp'] ?? 0).to.equal(before);
    });

    it('connects by a name only to the addresses the guard checked (DNS pinned): NETWORK_BLOCKLIST wins over MCP_ALLOWLIST', async () => {
      const server = await hostileServer();
      const byName = server.url('/mcp').replace('127.0.0.1', 'localhost');
      expect((await discoverTools({ url: byName }, testMcpOptions({ MCP_ALLOWLIST: ['localhost'] }))).tools.length).to.be.greaterThan(0);
      const before = server.stats.initializations['/mcp'] ?? 0;
      const err = await expectReason(byName, 'guard', /localhost resolves to .* NETWORK_BLOCKLIST/, testMcpOptions({ MCP_ALLOWLIST: ['localhost'], NETWORK_BLOCKLIST: ['127.0.0.0/8', '::1'] }));
      expect(err.message).to.match(/network guard/);
      expect(server.stats.initializations['/mcp'] ?? 0).to.equal(before);
    });

    it('refuses http:// to a host MCP_ALLOWLIST does not name', async () => {
      const server = await hostileServer();
      await expectReason(server.url('/mcp'), 'guard', /http:\/\/ is allowed only for hosts in MCP_ALLOWLIST/, testMcpOptions({ MCP_ALLOWLIST: ['mcp.example.com'] }));
    });

    it('refuses a header value HTTP cannot carry without quoting it', async () => {
      const server = await hostileServer();
      const err = await failure(discoverTools({ url: server.url('/mcp'), headers: { 'X-Api-Key': 'line-one-secret\r\nInjected: yes' } }, testMcpOptions()));
      expect(err.reason).to.equal('bad_headers');
      expect(err.message).to.match(/X-Api-Key cannot be sent/);
      expect(err.message).not.to.match(/line-one-secret|Injected/);
    });

    it('shows the URL without its query string or user info', async () => {
      const server = await hostileServer();
      const url = server.closedUrl.replace('http://', 'http://user:pw-secret@') + '?token=query-secret';
      const err = await expectReason(url, 'refused', /connection refused/);
      expect(err.message).not.to.match(/pw-secret|query-secret/);
    });
  });
});
