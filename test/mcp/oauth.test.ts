import crypto from 'node:crypto';
import { expect } from 'chai';
import { discoverTools } from '../../src/mcp/discover';
import { McpCallFailed, McpUnreachable } from '../../src/mcp/errors';
import { clearOAuthTokens, clientAssertion, headersWithOAuth, resourceMetadataOf, type McpOAuthClient } from '../../src/mcp/oauth';
import { createMcpSessionPool, type McpSessionPool } from '../../src/mcp/pool';
import { startOAuthServers, type OAuthServers } from '../helpers/mcp-oauth-server';
import { testMcpOptions } from './options';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let clients = 0;

/**
 * OAuth client credentials against an authorization server and an MCP server requiring its tokens, both of our own on
 * loopback (test/helpers/mcp-oauth-server.ts).
 */
describe('MCP OAuth client credentials', function () {
  this.timeout(30_000);
  let servers: OAuthServers;
  let pool: McpSessionPool;
  before(async () => {
    servers = await startOAuthServers();
  });
  after(() => servers.close());
  beforeEach(() => {
    clearOAuthTokens();
    servers.expiresIn = 3600;
    servers.authMethods = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];
    servers.metadata = 'oauth';
    pool = createMcpSessionPool(testMcpOptions());
  });
  afterEach(() => pool.close());

  /** A client of its own per test: its counts are its own. */
  function secretClient(extra: Partial<McpOAuthClient> = {}): McpOAuthClient & { clientSecret: string } {
    const clientId = `client-${++clients}-${crypto.randomBytes(3).toString('hex')}`;
    const clientSecret = `cs-${crypto.randomBytes(16).toString('hex')}`;
    servers.client(clientId, { secret: clientSecret });
    return { clientId, clientSecret, ...extra };
  }
  const issued = (client: McpOAuthClient) => servers.stats.issued[client.clientId] ?? 0;
  const lastRequest = () => servers.stats.requests.at(-1)!;

  it('discovers the token endpoint from the 401 (resource_metadata, then RFC 8414 metadata) and lists the tools with the token', async () => {
    const oauth = secretClient({ scope: 'tools:read tools:call' });
    const found = await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions());
    expect(found.tools.map((t) => t.name)).to.deep.equal(['whoami']);
    expect(issued(oauth)).to.equal(1);
    expect(lastRequest()).to.deep.equal({ clientId: oauth.clientId, method: 'client_secret_basic', resource: servers.mcpUrl, scope: 'tools:read tools:call' });
  });

  it('discovers from the well-known protected-resource path when the 401 names no metadata, and from OpenID metadata', async () => {
    servers.metadata = 'openid';
    const oauth = secretClient();
    const found = await discoverTools({ url: servers.plainUrl, oauth }, testMcpOptions());
    expect(found.tools.map((t) => t.name)).to.deep.equal(['whoami']);
    expect(lastRequest()).to.include({ clientId: oauth.clientId, resource: servers.plainUrl, scope: null });
  });

  it('uses the token_url given, sending the token from the first request on', async () => {
    const oauth = secretClient({ tokenUrl: servers.tokenUrl });
    const unauthorized = servers.stats.unauthorized;
    await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions());
    expect(issued(oauth)).to.equal(1);
    expect(servers.stats.unauthorized, 'no request went without the token').to.equal(unauthorized);
  });

  it('uses client_secret_post when the metadata lists only that', async () => {
    servers.authMethods = ['client_secret_post'];
    const oauth = secretClient();
    await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions());
    expect(lastRequest()).to.include({ clientId: oauth.clientId, method: 'client_secret_post' });
  });

  for (const [type, options] of [
    ['RSA', { modulusLength: 2048 }],
    ['EC P-256', { namedCurve: 'prime256v1' }],
    ['Ed25519', {}],
  ] as const) {
    it(`authenticates with private_key_jwt signed by an ${type} key`, async () => {
      const kind = type === 'RSA' ? 'rsa' : type === 'Ed25519' ? 'ed25519' : 'ec';
      const { privateKey, publicKey } = crypto.generateKeyPairSync(kind as 'rsa', options as crypto.RSAKeyPairKeyObjectOptions);
      const clientId = `jwt-client-${++clients}`;
      servers.client(clientId, { publicKey: publicKey.export({ type: 'spki', format: 'pem' }) as string });
      const oauth = { clientId, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
      const result = await pool.callTool({ key: `jwt-${type}`, url: servers.mcpUrl, oauth }, { name: 'whoami' });
      expect(result.content).to.deep.equal([{ type: 'text', text: `client ${clientId}` }]);
      expect(lastRequest()).to.include({ clientId, method: 'private_key_jwt', resource: servers.mcpUrl });
    });
  }

  it('signs client assertions the token endpoint can verify (header, claims)', () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const jwt = clientAssertion(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 'c1', 'https://as.example.com');
    const [head, payload, signature] = jwt.split('.');
    expect(JSON.parse(Buffer.from(head!, 'base64url').toString())).to.deep.equal({ alg: 'ES256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    expect(claims).to.include({ iss: 'c1', sub: 'c1', aud: 'https://as.example.com' });
    expect(claims.exp - claims.iat).to.equal(300);
    expect(crypto.verify('sha256', Buffer.from(`${head}.${payload}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature!, 'base64url'))).to.equal(true);
  });

  it('reads resource_metadata from a WWW-Authenticate challenge', () => {
    expect(resourceMetadataOf('Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="x"')).to.equal(
      'https://a.example/.well-known/oauth-protected-resource/mcp',
    );
    expect(resourceMetadataOf('Bearer error="invalid_token", resource_metadata=https://a.example/prm')).to.equal('https://a.example/prm');
    expect(resourceMetadataOf('Bearer')).to.equal(undefined);
    expect(resourceMetadataOf(null)).to.equal(undefined);
  });

  it('keeps the token for the install while it is good: a worker session and discovery reuse it', async () => {
    const oauth = secretClient();
    await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions());
    for (let i = 0; i < 3; i++) await pool.callTool({ key: 'reuse', url: servers.mcpUrl, oauth }, { name: 'whoami' });
    expect(issued(oauth)).to.equal(1);
  });

  it('asks for one token when many requests need one at once', async () => {
    const oauth = secretClient({ tokenUrl: servers.tokenUrl });
    await Promise.all(Array.from({ length: 5 }, (_, i) => pool.callTool({ key: `together-${i}`, url: servers.mcpUrl, oauth }, { name: 'whoami' })));
    expect(issued(oauth)).to.equal(1);
  });

  it('fetches a new token once the last one expired', async () => {
    servers.expiresIn = 1;
    const oauth = secretClient();
    await pool.callTool({ key: 'expiry', url: servers.mcpUrl, oauth }, { name: 'whoami' });
    expect(issued(oauth)).to.equal(1);
    await sleep(1_100);
    const unauthorized = servers.stats.unauthorized;
    const result = await pool.callTool({ key: 'expiry', url: servers.mcpUrl, oauth }, { name: 'whoami' });
    expect(result.content).to.deep.equal([{ type: 'text', text: `client ${oauth.clientId}` }]);
    expect(issued(oauth), 'a new token before the request').to.equal(2);
    expect(servers.stats.unauthorized, 'the expired token was not sent').to.equal(unauthorized);
  });

  it('fetches a new token when the server refuses the one it has (revoked), and the call runs once', async () => {
    const oauth = secretClient();
    const target = { key: 'revoked', url: servers.mcpUrl, oauth };
    await pool.callTool(target, { name: 'whoami' });
    servers.revokeAll();
    const calls = servers.stats.calls;
    const result = await pool.callTool(target, { name: 'whoami' });
    expect(result.content).to.deep.equal([{ type: 'text', text: `client ${oauth.clientId}` }]);
    expect(issued(oauth)).to.equal(2);
    expect(servers.stats.calls).to.equal(calls + 1);
  });

  it('gives a worker session the token when the OAuth client rides on the headers (as a call target is built)', async () => {
    const oauth = secretClient();
    const headers = headersWithOAuth({ 'X-Trace': 'on' }, oauth);
    expect(Object.keys(headers), 'the client is no header').to.deep.equal(['X-Trace']);
    expect(JSON.stringify(headers)).to.not.include(oauth.clientSecret);
    const result = await pool.callTool({ key: 'riding', url: servers.mcpUrl, headers }, { name: 'whoami' });
    expect(result.content).to.deep.equal([{ type: 'text', text: `client ${oauth.clientId}` }]);
  });

  it('fails with reason oauth naming the token endpoint, never quoting the secret, when the client is refused', async () => {
    const oauth = { ...secretClient(), clientSecret: `wrong-${crypto.randomBytes(12).toString('hex')}` };
    const err = await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(McpUnreachable);
    const { reason, message } = err as McpUnreachable;
    expect(reason).to.equal('oauth');
    expect(message).to.include(`no OAuth token could be obtained: the token endpoint ${servers.tokenUrl} answered HTTP 401 (invalid_client)`);
    expect(message).to.not.include(oauth.clientSecret);
  });

  it('a worker call that cannot get a token did not run: reason oauth, not reached', async () => {
    const oauth = { ...secretClient(), clientSecret: 'not-the-secret-at-all' };
    const err = await pool.callTool({ key: 'refused', url: servers.mcpUrl, oauth }, { name: 'whoami' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(McpCallFailed);
    expect(err).to.include({ reason: 'oauth', reachedServer: false });
    expect((err as Error).message).to.not.include('not-the-secret-at-all');
  });

  it('fails with reason oauth when the token endpoint cannot be reached, or no metadata names one', async () => {
    const unreachable = await discoverTools({ url: servers.mcpUrl, oauth: secretClient({ tokenUrl: 'http://127.0.0.1:1/token' }) }, testMcpOptions()).catch((e: McpUnreachable) => e);
    expect(unreachable).to.include({ reason: 'oauth' });
    expect((unreachable as Error).message).to.include('the token endpoint http://127.0.0.1:1/token: connection refused');
    servers.metadata = 'none';
    const noMetadata = await discoverTools({ url: servers.mcpUrl, oauth: secretClient() }, testMcpOptions()).catch((e: McpUnreachable) => e);
    expect(noMetadata).to.include({ reason: 'oauth' });
    expect((noMetadata as Error).message).to.include(`no metadata of the authorization server ${servers.asBase}/ names a token endpoint`);
  });

  it('sends nothing to a token endpoint the network guard refuses (https rule, MCP_ALLOWLIST)', async () => {
    const oauth = secretClient({ tokenUrl: 'http://auth.example.com/token' });
    const err = await discoverTools({ url: servers.mcpUrl, oauth }, testMcpOptions()).catch((e: McpUnreachable) => e);
    expect(err).to.include({ reason: 'oauth' });
    expect((err as Error).message).to.include('the network guard refuses http://auth.example.com/token: http:// is allowed only for hosts in MCP_ALLOWLIST');
  });
});
