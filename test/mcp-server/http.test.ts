import { expect } from 'chai';
import { CreateTaskResultSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { api, readResponse, signedIn, startApi } from '../helpers/api';
import { openaiText } from '../helpers/fake-provider';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { mcpClient, mcpUrl } from '../helpers/mcp-client';

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

/** One JSON-RPC message POSTed as MCP clients do. */
async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return readResponse(res);
}

describe('MCP server: HTTP (auth, origin, sessions, limits)', () => {
  beforeEach(() => getStack().fake.reset());

  it('answers a request without valid credentials 401 naming its resource metadata, which is served', async () => {
    const { apiUrl } = getStack();
    for (const [path, profile] of [['/mcp', ''], ['/mcp/work', '/work']] as const) {
      for (const headers of [{}, { authorization: 'Bearer not-a-session' }] as Array<Record<string, string>>) {
        const res = await post(`${apiUrl}${path}`, INIT, headers);
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.equal(`Bearer resource_metadata="${apiUrl}/.well-known/oauth-protected-resource/mcp${profile}"`);
        expect(res.body.error.code).to.be.a('number');
      }
      const doc = await fetch(`${apiUrl}/.well-known/oauth-protected-resource/mcp${profile}`).then(readResponse);
      expect(doc.status).to.equal(200);
      expect(doc.body).to.include({ resource: `${apiUrl}${path}` });
      expect(doc.body.bearer_methods_supported).to.deep.equal(['header']);
      expect(doc.body).to.not.have.property('authorization_servers');
    }
  });

  it('refuses another site\'s Origin and a Host that is not the service\'s (DNS rebinding)', async () => {
    const me = await signedIn('mcp-origin');
    const auth = { authorization: `Bearer ${me.sessionId}` };
    const evil = await post(mcpUrl(), INIT, { ...auth, origin: 'http://evil.example' });
    expect(evil.status).to.equal(403);
    expect(evil.body.error.message).to.match(/Origin/);
    const rebound = await post(mcpUrl(), INIT, { ...auth, host: 'evil.example', origin: 'http://evil.example' });
    expect(rebound.status).to.equal(403);
    const own = await post(mcpUrl(), INIT, { ...auth, origin: getStack().apiUrl });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.result.protocolVersion).to.equal('2025-11-25');
    expect(own.headers.get('mcp-session-id')).to.be.a('string');
  });

  it('refuses another user\'s session id, an unknown protocol version, and a profile the user does not have', async () => {
    const me = await signedIn('mcp-sess');
    const other = await signedIn('mcp-sess2');
    const theirs = (await post(mcpUrl(), INIT, { authorization: `Bearer ${other.sessionId}` })).headers.get('mcp-session-id')!;
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    const auth = { authorization: `Bearer ${me.sessionId}` };
    const stolen = await post(mcpUrl(), ping, { ...auth, 'mcp-session-id': theirs });
    expect(stolen.status).to.equal(404);
    expect(stolen.body.error.message).to.match(/unknown session/);
    const mine = (await post(mcpUrl(), INIT, auth)).headers.get('mcp-session-id')!;
    expect((await post(mcpUrl(), ping, { ...auth, 'mcp-session-id': mine })).body).to.deep.equal({ jsonrpc: '2.0', id: 2, result: {} });
    const version = await post(mcpUrl(), ping, { ...auth, 'mcp-protocol-version': '1999-01-01' });
    expect(version.status).to.equal(400);
    expect(version.body.error.message).to.match(/MCP-Protocol-Version/);
    const older = await post(mcpUrl(), { ...INIT, params: { ...INIT.params, protocolVersion: '2024-11-05' } }, auth);
    expect(older.body.result.protocolVersion).to.equal('2025-11-25');
    expect((await post(mcpUrl('nowhere'), INIT, auth)).status).to.equal(404);
  });

  it('answers past the trigger limit with a JSON-RPC error carrying retry_after, and starts nothing', async () => {
    const me = await signedIn('mcp-limit');
    await createTask(me.api, 'default', 'greet');
    getStack().fake.script(() => openaiText('ok'));
    const limited = await startApi({ TRIGGER_LIMIT_PER_MINUTE: '1' });
    try {
      const client = await mcpClient(me.sessionId, { base: limited.url });
      const call = () => client.request({ method: 'tools/call', params: { name: 'greet', arguments: { text: 'x' }, task: {} } }, CreateTaskResultSchema);
      await call();
      let err: any;
      try {
        await call();
      } catch (e) {
        err = e;
      }
      expect(err?.code).to.equal(-32029);
      expect(err.data.retry_after).to.be.a('number').greaterThan(0);
      expect((await client.experimental.tasks.listTasks()).tasks).to.have.length(1);
    } finally {
      await limited.close();
    }
  });

  it('tells GET streams of the profile that its tools changed when a task is saved through another API process', async function () {
    this.timeout(30_000);
    const me = await signedIn('mcp-changed');
    await createTask(me.api, 'default', 'first');
    const client = await mcpClient(me.sessionId);
    const changed = new Promise<void>((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
    // The GET stream opens after `initialized`; the watch's first read sets what "unchanged" is.
    await new Promise((r) => setTimeout(r, 2_500));
    const second = await startApi({});
    try {
      const saved = await api(me.sessionId, second.url).request('PUT', '/api/tasks/~/default/second', { runner: 'openai', openai: { prompt: 'Hi', model: 'test-model' }, settings: { key: 'sk-test-key-0123456789abcdef' } });
      expect(saved.status).to.equal(201);
      await changed;
      expect((await client.listTools()).tools.map((t) => t.name)).to.deep.equal(['first', 'second']);
    } finally {
      await second.close();
    }
  });

  it('answers POST /api/mcp/sse/url with the profile\'s MCP URL, or a 404 saying why', async () => {
    const me = await signedIn('mcp-sse');
    const res = await me.api.post('/api/mcp/sse/url', { version: 'v0', activeProfile: '~/default', expiresIn: 3600 });
    expect(res.status, res.text).to.equal(200);
    expect(res.text).to.equal(`${getStack().apiUrl}/mcp`);
    expect((await me.api.post('/api/mcp/sse/url', { activeProfile: `${me.username}/default` })).text).to.equal(`${getStack().apiUrl}/mcp`);
    const missing = await me.api.post('/api/mcp/sse/url', { activeProfile: '~/nowhere' });
    expect(missing.status).to.equal(404);
    expect(missing.body.error.message).to.match(/profile "~\/nowhere" not found.*MCP endpoint/);
    expect((await me.api.post('/api/mcp/sse/url', { activeProfile: 'someone-else/default' })).status).to.equal(404);
  });

  it('takes access tokens, limited to their profiles and scopes, and refuses a revoked one', async () => {
    const me = await signedIn('mcp-token');
    await createTask(me.api, 'default', 'greet');
    expect((await me.api.post('/api/profiles/~/work', { description: 'work' })).status).to.be.oneOf([200, 201]);
    const made = await me.api.post('/api/tokens/~', { name: 'reader', profiles: ['default'], scopes: ['tasks:read', 'runs:read'] });
    expect(made.status, made.text).to.equal(201);
    const token = made.body.token as string;
    const client = await mcpClient(token);
    expect((await client.listTools()).tools.map((t) => t.name)).to.deep.equal(['greet']);
    let err: any;
    try {
      await client.callTool({ name: 'greet', arguments: { text: 'x' } });
    } catch (e) {
      err = e;
    }
    expect(err?.message).to.match(/runs:trigger/);
    expect(getStack().fake.requests).to.have.length(0);
    const work = await post(mcpUrl('work'), INIT, { authorization: `Bearer ${token}` });
    expect(work.status).to.equal(403);
    expect(work.body.error.message).to.match(/not for profile "work"/);
    expect((await me.api.delete('/api/tokens/~/reader')).status).to.equal(204);
    await new Promise((r) => setTimeout(r, getStack().config.SESSION_CACHE_MS + 100));
    const revoked = await post(mcpUrl(), INIT, { authorization: `Bearer ${token}` });
    expect(revoked.status).to.equal(401);
    expect(revoked.headers.get('www-authenticate')).to.match(/^Bearer resource_metadata=/);
  });
});
