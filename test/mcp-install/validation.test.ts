import { expect } from 'chai';
import { signedIn, type Api } from '../helpers/api';
import { getStack } from '../helpers/stack';

/**
 * MCP install bodies the API refuses before anything connects: each a 400 naming the field, in the error shape of
 * every other route. (The stack's API has no MCP_ALLOWLIST: no loopback URL here may be reached.)
 */
describe('MCP installs: bodies refused before connecting', () => {
  let me: { username: string; api: Api };
  const install = (body: unknown, profile = 'default') => me.api.post(`/api/profiles/~/${profile}/installations`, body);
  const url = 'https://mcp.example.invalid/mcp';

  before(async () => {
    me = await signedIn('mcpv');
    // a servlet install "ev" in profile "taken" (its servlet need not exist for these tests)
    await me.api.post('/api/profiles/~/taken', {});
    const now = new Date();
    await getStack().db.models.Installation.create({ owner: me.username, profile: 'taken', name: 'ev', servlet_owner: 'o', servlet_name: 's', created_at: now, modified_at: now });
  });

  it('answers 400 naming both fields when a body has servlet_slug and mcp, and 400 when it has neither', async () => {
    const both = await install({ servlet_slug: '~/g', name: 'ev', mcp: { url } });
    expect(both.status).to.equal(400);
    expect(both.body.error).to.deep.equal({ code: 'invalid_request', message: 'servlet_slug, mcp: give one of them (a servlet, or an MCP server), not both' });
    const neither = await install({ name: 'ev', settings: {} });
    expect(neither.status).to.equal(400);
    expect(neither.body.error.message).to.match(/^servlet_slug: required \(or mcp, to install an MCP server\)$/);
    // null counts as absent, as everywhere else
    expect((await install({ servlet_slug: null, mcp: null })).body.error.message).to.match(/^servlet_slug: required/);
  });

  it('answers 400 naming the field for a bad name, URL, header or setting', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ mcp: { url } }, /^name: required$/],
      [{ name: 'bad name', mcp: { url } }, /^name: expected letters/],
      [{ name: 'ev', mcp: {} }, /^mcp\.url: required$/],
      [{ name: 'ev', mcp: 'https://x' }, /^mcp: expected object, received string$/],
      [{ name: 'ev', mcp: { url: 'not a url' } }, /^mcp\.url: expected an https:\/\/ URL$/],
      [{ name: 'ev', mcp: { url: 'ftp://mcp.example.invalid/' } }, /^mcp\.url: expected an https:\/\/ URL$/],
      [{ name: 'ev', mcp: { url: `https://x.invalid/${'a'.repeat(2100)}` } }, /^mcp\.url: must be at most 2048 characters$/],
      [{ name: 'ev', mcp: { url, headers: ['Authorization'] } }, /^mcp\.headers: /],
      [{ name: 'ev', mcp: { url, headers: { 'Bad Name': 'x' } } }, /^mcp\.headers\.Bad Name: expected a header name/],
      [{ name: 'ev', mcp: { url, headers: { 'X-Token': 'a\r\nHost: evil' } } }, /^mcp\.headers\.X-Token: expected a header value/],
      [{ name: 'ev', mcp: { url, headers: { 'X-Token': 5 } } }, /^mcp\.headers\.X-Token: expected string, received number$/],
      [{ name: 'ev', mcp: { url, headers: { host: 'evil.example' } } }, /^mcp\.headers\.host: set by the MCP transport itself$/],
      [{ name: 'ev', mcp: { url, headers: { 'Mcp-Session-Id': 'x' } } }, /^mcp\.headers\.Mcp-Session-Id: set by the MCP transport itself$/],
      [{ name: 'ev', mcp: { url, headers: { 'X-A': '1', 'x-a': '2' } } }, /^mcp\.headers\.x-a: given twice/],
      [{ name: 'ev', mcp: { url, headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`X-H${i}`, 'v'])) } }, /^mcp\.headers: expected at most 32 headers$/],
      [{ name: 'ev', mcp: { url }, settings: { approval: 'all' } }, /^settings\.approval: expected "\*", "none", "destructive" or a list of tool names$/],
      [{ name: 'ev', mcp: { url }, settings: { approval: [] } }, /^settings\.approval: /],
      [{ name: 'ev', mcp: { url }, settings: { tools: 'echo' } }, /^settings\.tools: expected array, received string$/],
      [{ name: 'ev', mcp: { url }, settings: { tools: ['echo', 'echo'] } }, /^settings\.tools: expected each tool name once$/],
      [{ name: 'ev', mcp: { url }, settings: { tools: [''] } }, /^settings\.tools\.0: expected a tool name$/],
      [{ name: 'ev', mcp: { url }, allow_update: 'yes' }, /^allow_update: /],
    ];
    for (const [body, message] of bad) {
      const res = await install(body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_request');
      expect(res.body.error.message, JSON.stringify(body).slice(0, 200)).to.match(message);
    }
  });

  it('refuses loopback URLs through the network guard, naming mcp.url, without connecting', async () => {
    // Nothing listens on port 9 (discard); the guard refuses before any connection is tried.
    const cases: Array<[string, RegExp]> = [
      ['http://127.0.0.1:9/mcp', /^mcp\.url: http:\/\/ is allowed only for hosts in MCP_ALLOWLIST/],
      ['https://127.0.0.1:9/mcp', /^mcp\.url: 127\.0\.0\.1 is a loopback address; to allow it, add the host to MCP_ALLOWLIST$/],
      ['https://localhost:9/mcp', /^mcp\.url: host localhost is a loopback name; to allow it, add the host to MCP_ALLOWLIST$/],
      ['https://[::1]:9/mcp', /^mcp\.url: ::1 is a loopback address/],
    ];
    for (const [target, message] of cases) {
      const res = await install({ name: 'ev', mcp: { url: target } });
      expect(res.status, target).to.equal(400);
      expect(res.body.error.code, target).to.equal('invalid_request');
      expect(res.body.error.message, target).to.match(message);
    }
  });

  it('answers 404 for a missing profile and 409 for a taken name with allow_update false, before connecting', async () => {
    const missing = await install({ name: 'ev', mcp: { url: 'https://127.0.0.1:9/mcp' } }, 'nope');
    expect(missing.status).to.equal(404);
    const taken = await install({ name: 'ev', mcp: { url: 'https://127.0.0.1:9/mcp' }, allow_update: false }, 'taken');
    expect(taken.status).to.equal(409);
    expect(taken.body.error.code).to.equal('install_exists');
  });

  it("answers a refresh 404 for an install that does not exist or another user's, and 400 for a servlet install", async () => {
    const other = await signedIn('mcpv');
    expect((await me.api.post('/api/profiles/~/default/installations/none/refresh')).status).to.equal(404);
    expect((await me.api.post(`/api/profiles/${other.username}/taken/installations/ev/refresh`)).status).to.equal(404);
    const servlet = await me.api.post('/api/profiles/~/taken/installations/ev/refresh');
    expect(servlet.status).to.equal(400);
    expect(servlet.body.error).to.deep.equal({ code: 'not_mcp_install', message: 'name: install "ev" is a servlet install; only MCP installs list their tools again' });
  });
});
