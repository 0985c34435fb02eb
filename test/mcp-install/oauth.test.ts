import crypto from 'node:crypto';
import { expect } from 'chai';
import { mcpInstallView } from '../../src/http/presenters/mcp-installation';
import { createMcpSessionPool } from '../../src/mcp/pool';
import { rotateSecrets } from '../../src/store/key-rotation';
import { mcpInstallForCall } from '../../src/store/mcp-installs';
import type { Keyring } from '../../src/store/secrets';
import { api, signedIn, startApi, type Api } from '../helpers/api';
import { startOAuthServers, type OAuthServers } from '../helpers/mcp-oauth-server';
import { getStack } from '../helpers/stack';
import { testMcpOptions } from '../mcp/options';

/**
 * Installing an MCP server with OAuth client credentials through the API (MCP_ALLOWLIST=127.0.0.1), against an
 * authorization server and a protected MCP server of our own on loopback; then a worker's call with the stored install.
 */
describe('MCP installs: OAuth client credentials', function () {
  this.timeout(60_000);
  let apiUrl: string;
  let servers: OAuthServers;
  let me: { username: string; api: Api };
  let n = 0;
  const install = (body: unknown) => me.api.post('/api/profiles/~/default/installations', body);
  const client = () => {
    const clientId = `api-client-${++n}`;
    const clientSecret = `cs-api-${crypto.randomBytes(16).toString('hex')}`;
    servers.client(clientId, { secret: clientSecret });
    return { clientId, clientSecret };
  };
  const rawInstall = async (name: string) => JSON.stringify(await getStack().db.conn.db!.collection('installations').findOne({ owner: me.username, name }));

  before(async () => {
    apiUrl = (await startApi({ MCP_ALLOWLIST: '127.0.0.1', MCP_CONNECT_TIMEOUT_MS: '5000' })).url;
    servers = await startOAuthServers();
  });
  after(() => servers.close());
  beforeEach(async () => {
    const user = await signedIn('mcpo');
    me = { username: user.username, api: api(user.sessionId, apiUrl) };
  });

  it('installs a server whose token endpoint is discovered, showing the client without its secret, and stores the secret sealed', async () => {
    const { clientId, clientSecret } = client();
    const res = await install({ name: 'prot', mcp: { url: servers.mcpUrl, oauth: { client_id: clientId, client_secret: clientSecret, scope: 'mcp' } } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.mcp.oauth).to.deep.equal({ client_id: clientId, scope: 'mcp', auth: 'client_secret' });
    expect(res.body.mcp.tools.map((t: { name: string }) => t.name)).to.deep.equal(['whoami']);
    expect(mcpInstallView.parse(res.body), "the OpenAPI document's McpInstall, nothing more").to.deep.equal(res.body);
    expect(res.text).to.not.include(clientSecret);
    const raw = await rawInstall('prot');
    expect(raw).to.not.include(clientSecret);
    for (const token of servers.stats.bearerSeen) expect(raw).to.not.include(token);
    expect(servers.stats.requests.at(-1)).to.include({ clientId, resource: servers.mcpUrl, scope: 'mcp' });

    const listed = (await me.api.get('/api/profiles/~/default/installations')).body.installs.find((i: { name: string }) => i.name === 'prot');
    expect(listed.mcp.oauth).to.deep.equal(res.body.mcp.oauth);
    const refreshed = await me.api.post('/api/profiles/~/default/installations/prot/refresh');
    expect(refreshed.status, refreshed.text).to.equal(200);
  });

  it('installs with a token_url and a private key (private_key_jwt), shown as auth "private_key"', async () => {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const clientId = `api-jwt-${++n}`;
    servers.client(clientId, { publicKey: publicKey.export({ type: 'spki', format: 'pem' }) as string });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const res = await install({ name: 'jwt', mcp: { url: servers.mcpUrl, oauth: { token_url: `${servers.tokenUrl}?tenant=t1`, client_id: clientId, private_key: pem } } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.mcp.oauth).to.deep.equal({ token_url: servers.tokenUrl, client_id: clientId, auth: 'private_key' });
    const body = pem.split('\n')[1]!;
    expect(await rawInstall('jwt')).to.not.include(body);
    expect(servers.stats.requests.at(-1)).to.include({ clientId, method: 'private_key_jwt' });
  });

  it('answers 400 mcp_unreachable naming the token endpoint, never quoting the secret, when the client is refused', async () => {
    const { clientId } = client();
    const wrong = `cs-wrong-${crypto.randomBytes(16).toString('hex')}`;
    const res = await install({ name: 'bad', mcp: { url: servers.mcpUrl, oauth: { client_id: clientId, client_secret: wrong } } });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error).to.deep.equal({
      code: 'mcp_unreachable',
      message: `mcp.oauth: the MCP server at ${servers.mcpUrl} cannot be used: no OAuth token could be obtained: the token endpoint ${servers.tokenUrl} answered HTTP 401 (invalid_client): check mcp.oauth (client_id, client_secret or private_key, scope)`,
    });
    expect(res.text).to.not.include(wrong);
    expect((await me.api.get('/api/profiles/~/default/installations')).body.installs).to.deep.equal([]);
  });

  it('answers 400 mcp_unreachable when the token endpoint cannot be reached', async () => {
    const { clientId, clientSecret } = client();
    const res = await install({ name: 'gone', mcp: { url: servers.mcpUrl, oauth: { token_url: 'http://127.0.0.1:1/token', client_id: clientId, client_secret: clientSecret } } });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.error.code).to.equal('mcp_unreachable');
    expect(res.body.error.message).to.include('no OAuth token could be obtained: the token endpoint http://127.0.0.1:1/token: connection refused');
  });

  it('refuses a bad mcp.oauth with 400 naming the field', async () => {
    const url = servers.mcpUrl;
    for (const [oauth, headers, message] of [
      [{ client_id: 'c' }, undefined, 'mcp.oauth.client_secret: required (or private_key, for private_key_jwt)'],
      [{ client_secret: 's' }, undefined, 'mcp.oauth.client_id: required'],
      [{ client_id: 'c', client_secret: 's', private_key: 'x' }, undefined, 'mcp.oauth.private_key: give client_secret or private_key, not both'],
      [{ client_id: 'c', private_key: 'not a key' }, undefined, 'mcp.oauth.private_key: expected a PEM private key (-----BEGIN PRIVATE KEY----- …)'],
      [{ client_id: 'c', client_secret: 's', token_url: 'ftp://x/token' }, undefined, 'mcp.oauth.token_url: expected an https:// URL'],
      [{ client_id: 'c', client_secret: 's', scope: 'a  b' }, undefined, 'mcp.oauth.scope: expected scope names separated by single spaces'],
      [{ client_id: 'c', client_secret: 's' }, { authorization: 'Bearer x' }, 'mcp.headers.authorization: set by mcp.oauth (its token)'],
      [{ client_id: 'c', client_secret: 's', token_url: 'http://auth.example.com/token' }, undefined, 'mcp.oauth.token_url: http:// is allowed only for hosts in MCP_ALLOWLIST (auth.example.com is not): use https://'],
    ] as const) {
      const res = await install({ name: 'v', mcp: { url, oauth, ...(headers ? { headers } : {}) } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error, JSON.stringify(oauth)).to.deep.equal({ code: 'invalid_request', message });
    }
  });

  it("gives a worker's call the token: the call target built from the stored install, as the activity builds it", async () => {
    const { clientId, clientSecret } = client();
    expect((await install({ name: 'call', mcp: { url: servers.mcpUrl, oauth: { client_id: clientId, client_secret: clientSecret } } })).status).to.equal(201);
    const { db, keyring } = getStack();
    const found = await mcpInstallForCall(db.models, keyring, { owner: me.username, profile: 'default', name: 'call' });
    const pool = createMcpSessionPool(testMcpOptions());
    try {
      // activities/mcp-call.ts: `{ key, url: install.url, headers: install.headers, oauth: install.oauth }`
      const result = await pool.callTool({ key: `${me.username}/default/call`, url: found!.url, headers: found!.headers, oauth: found!.oauth }, { name: 'whoami' });
      expect(result.content).to.deep.equal([{ type: 'text', text: `client ${clientId}` }]);
      expect(JSON.stringify(found!.headers)).to.equal('{}');
    } finally {
      await pool.close();
    }
  });

  it('re-seals the OAuth secrets when the master key rotates', async () => {
    const { clientId, clientSecret } = client();
    expect((await install({ name: 'rot', mcp: { url: servers.mcpUrl, oauth: { client_id: clientId, client_secret: clientSecret } } })).status).to.equal(201);
    const { db, keyring: original } = getStack();
    const rotated: Keyring = { current: { id: 'k-oauth-next', key: crypto.randomBytes(32) }, retired: [original.current, ...original.retired] };
    try {
      const counts = Object.fromEntries((await rotateSecrets(db.models, rotated)).map((c) => [c.collection, c]));
      expect(counts['installations.mcp.oauth']!.rotated).to.be.at.least(1);
      const doc = await db.models.Installation.findOne({ owner: me.username, name: 'rot' }).lean();
      expect(doc!.mcp!.oauth!.secret!.kid).to.equal('k-oauth-next');
      const pool = createMcpSessionPool(testMcpOptions());
      try {
        const found = await mcpInstallForCall(db.models, { current: rotated.current, retired: [] }, { owner: me.username, profile: 'default', name: 'rot' });
        const result = await pool.callTool({ key: 'rot', url: found!.url, headers: found!.headers, oauth: found!.oauth }, { name: 'whoami' });
        expect(result.content).to.deep.equal([{ type: 'text', text: `client ${clientId}` }]);
      } finally {
        await pool.close();
      }
    } finally {
      await rotateSecrets(db.models, { current: original.current, retired: [rotated.current] });
    }
  });
});
