import { expect } from 'chai';
import { mcpInstallView } from '../../src/http/presenters/mcp-installation';
import { installsWithTools } from '../../src/store/installations';
import { seal } from '../../src/store/secrets';
import { api, signedIn, startApi, type Api } from '../helpers/api';
import { everythingServer } from '../helpers/mcp-everything';
import { hostileServer, type HostileServer } from '../helpers/mcp-hostile-server';
import { getStack } from '../helpers/stack';

const SECRET_HEADER = 'Bearer mcp-install-secret-7c1d9e2b4a';
const SECRET_QUERY = 'qk-mcp-install-5e8f0a3c';

/**
 * Installing MCP servers through the API, against the real server-everything and a hostile server of our own, both on
 * loopback: the API here has MCP_ALLOWLIST=127.0.0.1 (and a short MCP_CONNECT_TIMEOUT_MS for the server that hangs).
 */
describe('MCP installs: installing a server and listing its tools again', function () {
  this.timeout(60_000);
  let mcpApiUrl: string;
  let everything: string;
  let hostile: HostileServer;
  let me: { username: string; sessionId: string; api: Api };
  const install = (body: unknown, profile = 'default') => me.api.post(`/api/profiles/~/${profile}/installations`, body);
  const refresh = (name: string) => me.api.post(`/api/profiles/~/default/installations/${name}/refresh`);
  const list = async () => (await me.api.get('/api/profiles/~/default/installations')).body.installs;

  before(async () => {
    mcpApiUrl = (await startApi({ MCP_ALLOWLIST: '127.0.0.1', MCP_CONNECT_TIMEOUT_MS: '3000' })).url;
    everything = (await everythingServer()).url;
    hostile = await hostileServer();
  });
  beforeEach(async () => {
    const user = await signedIn('mcpi');
    me = { ...user, api: api(user.sessionId, mcpApiUrl) };
  });

  it('installs server-everything with 201, storing its tools, and shows the install with header names and the URL without its query', async () => {
    const res = await install({ name: 'ev', mcp: { url: `${everything}?key=${SECRET_QUERY}`, headers: { Authorization: SECRET_HEADER } } });
    expect(res.status, res.text).to.equal(201);
    const body = res.body;
    expect(body.name).to.equal('ev');
    expect(body.binding).to.deep.equal({ id: body.binding.id, contentAddress: null });
    expect(body.servlet).to.deep.include({ slug: `${me.username}/ev`, has_client: false });
    expect(body.servlet.meta.remote).to.deep.equal({ url: everything });
    expect(body.servlet.meta.description).to.be.a('string').and.not.equal('');
    expect(body.settings).to.deep.equal({ approval: 'destructive', sampling: false });
    expect(body.mcp.url).to.equal(everything);
    expect(body.mcp.headers).to.deep.equal(['Authorization']);
    expect(body.mcp.protocol_version).to.be.oneOf(['2025-11-25', '2025-06-18']);
    const tools = Object.fromEntries(body.mcp.tools.map((t: { name: string }) => [t.name, t]));
    expect(tools).to.include.keys(['echo', 'get-sum', 'get-tiny-image', 'get-structured-content', 'trigger-long-running-operation', 'simulate-research-query']);
    expect(tools.echo.inputSchema.type).to.equal('object');
    expect(tools.echo.description).to.be.a('string');
    expect(tools.echo.annotations).to.be.an('object');
    expect(tools['simulate-research-query'].execution).to.deep.equal({ taskSupport: 'required' });

    expect(mcpInstallView.parse(body), 'the OpenAPI document\'s McpInstall, nothing more').to.deep.equal(body);
    const listed = (await list()).find((i: { name: string }) => i.name === 'ev');
    expect(listed).to.deep.equal(body);
    const raw = JSON.stringify(await getStack().db.conn.db!.collection('installations').findOne({ owner: me.username, name: 'ev' }));
    for (const text of [res.text, JSON.stringify(listed), raw, getStack().logs.text()]) {
      expect(text).to.not.include(SECRET_HEADER.split(' ')[1]);
      expect(text).to.not.include(SECRET_QUERY);
    }
  });

  it('takes settings.tools and settings.approval naming listed tools, and answers 400 naming the field for a tool the server lacks', async () => {
    const ok = await install({ name: 'ev', mcp: { url: everything }, settings: { tools: ['echo', 'get-sum'], approval: ['get-sum'] } });
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.body.settings).to.deep.equal({ tools: ['echo', 'get-sum'], approval: ['get-sum'], sampling: false });
    const [offered] = await installsWithTools(getStack().db.models, me.username, 'default');
    expect(offered!.tools.map((t) => t.name)).to.deep.equal(['echo', 'get-sum']);
    for (const [settings, message] of [
      [{ tools: ['echo', 'nope'] }, 'settings.tools: the MCP server of "ev2" lists no tool named "nope"'],
      [{ approval: ['nope', 'echo', 'other'] }, 'settings.approval: the MCP server of "ev2" lists no tools named "nope", "other"'],
    ] as const) {
      const res = await install({ name: 'ev2', mcp: { url: everything }, settings });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.deep.equal({ code: 'invalid_request', message });
    }
    for (const approval of ['*', 'none', 'destructive']) {
      const res = await install({ name: `a-${approval === '*' ? 'all' : approval}`, mcp: { url: everything }, settings: { approval } });
      expect(res.status, approval).to.equal(201);
      expect(res.body.settings.approval).to.equal(approval);
    }
  });

  it('answers 400 mcp_unreachable saying why for a server that cannot be used, and stores nothing', async () => {
    const cases: Array<[string, RegExp]> = [
      [hostile.closedUrl, /refused|connect/i],
      [hostile.url('/401'), /401/],
      [hostile.url('/403'), /403/],
      [hostile.url('/garbage'), /not (an )?MCP|content type|JSON/i],
      [hostile.url('/hang'), /time|MCP_CONNECT_TIMEOUT_MS/i],
      [hostile.url('/huge'), /large|MCP_MAX_RESPONSE_BYTES|bytes/i],
    ];
    for (const [url, why] of cases) {
      const res = await install({ name: 'bad', mcp: { url, headers: { Authorization: SECRET_HEADER } } });
      expect(res.status, `${url}: ${res.text}`).to.equal(400);
      expect(res.body.error.code, url).to.equal('mcp_unreachable');
      expect(res.body.error.message, url).to.match(/^mcp\.url: /).and.match(why);
      // the 401 and 403 pages echo the Authorization header: it never reaches the answer
      expect(res.text, url).to.not.include(SECRET_HEADER.split(' ')[1]);
    }
    expect(await list()).to.deep.equal([]);
    expect(getStack().logs.text()).to.not.include(SECRET_HEADER.split(' ')[1]);
  });

  it('installs a server listing 500 tools in pages', async () => {
    const res = await install({ name: 'many', mcp: { url: hostile.url('/many') } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.mcp.tools).to.have.length(500);
  });

  it('lists the tools again on refresh, keeping the settings, and a dropped tool fails closed instead of failing the API', async () => {
    expect((await install({ name: 'ev', mcp: { url: everything }, settings: { tools: ['echo'], approval: ['echo'], sampling: true } })).status).to.equal(201);
    const first = await me.api.get('/api/profiles/~/default/installations');
    const before = first.body.installs[0];
    const again = await refresh('ev');
    expect(again.status, again.text).to.equal(200);
    const conditional = await me.api.get('/api/profiles/~/default/installations', { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect(conditional.status, 'the list changed: no 304').to.equal(200);
    expect(Date.parse(again.body.mcp.listed_at)).to.be.at.least(Date.parse(before.mcp.listed_at));
    expect(again.body.mcp.tools.map((t: { name: string }) => t.name)).to.include('echo');

    // The server behind the install changes (here: its stored URL now leads to a server without `echo`).
    const { db, keyring } = getStack();
    await db.models.Installation.updateOne({ owner: me.username, name: 'ev' }, { $set: { 'mcp.url_sealed': seal(keyring, hostile.url('/many')) } });
    const dropped = await refresh('ev');
    expect(dropped.status, dropped.text).to.equal(200);
    expect(dropped.body.settings).to.deep.equal({ tools: ['echo'], approval: ['echo'], sampling: true });
    expect(dropped.body.mcp.tools.map((t: { name: string }) => t.name)).to.not.include('echo');
    const [offered] = await installsWithTools(db.models, me.username, 'default');
    expect(offered!.tools, 'echo is not offered any more').to.deep.equal([]);

    // A server gone: 400 mcp_unreachable, and the tools stay as they were.
    await db.models.Installation.updateOne({ owner: me.username, name: 'ev' }, { $set: { 'mcp.url_sealed': seal(keyring, hostile.closedUrl) } });
    const gone = await refresh('ev');
    expect(gone.status).to.equal(400);
    expect(gone.body.error.code).to.equal('mcp_unreachable');
    expect((await list())[0].mcp.tools).to.deep.equal(dropped.body.mcp.tools);
  });

  it('refuses a refresh, naming mcp.url, where the network guard does not let the URL through', async () => {
    expect((await install({ name: 'ev', mcp: { url: everything } })).status).to.equal(201);
    // The stack's own API has no MCP_ALLOWLIST: a loopback server is refused there, before anything connects.
    const res = await api(me.sessionId).post('/api/profiles/~/default/installations/ev/refresh');
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('invalid_request');
    expect(res.body.error.message).to.match(/^mcp\.url: http:\/\/ is allowed only for hosts in MCP_ALLOWLIST/);
  });

  it('replaces an install of the same name with 200, and 409 install_exists with allow_update false', async () => {
    expect((await install({ name: 'ev', mcp: { url: everything } })).status).to.equal(201);
    const replaced = await install({ name: 'ev', mcp: { url: everything }, settings: { approval: 'none' } });
    expect(replaced.status).to.equal(200);
    expect(replaced.body.settings.approval).to.equal('none');
    const taken = await install({ name: 'ev', mcp: { url: everything }, allow_update: false });
    expect(taken.status).to.equal(409);
    expect(taken.body.error.code).to.equal('install_exists');
    expect((await me.api.delete('/api/profiles/~/default/installations/ev')).status).to.equal(204);
    expect(await list()).to.deep.equal([]);
  });
});
