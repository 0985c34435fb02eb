import crypto from 'node:crypto';
import { expect } from 'chai';
import { installsWithTools } from '../../src/store/installations';
import { rotateSecrets } from '../../src/store/key-rotation';
import {
  findMcpInstall,
  installMcp,
  listingProblem,
  loadMcpInstallForCall,
  mcpToolNeedsApproval,
  saveMcpListing,
  type McpApproval,
  type McpListing,
  type McpToolRecord,
} from '../../src/store/mcp-installs';
import type { Keyring } from '../../src/store/secrets';
import { signedIn } from '../helpers/api';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';

const HEADER_SECRET = `Bearer mcp-store-${crypto.randomBytes(8).toString('hex')}`;
const QUERY_SECRET = `q${crypto.randomBytes(8).toString('hex')}`;

const tool = (name: string, annotations?: McpToolRecord['annotations']): McpToolRecord => ({
  name,
  description: `the ${name} tool`,
  // keys FerretDB refuses as they are ("$schema", "a.b"): stored escaped, read back as listed
  inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { 'a.b': { type: 'string' } } },
  ...(annotations ? { annotations } : {}),
});

const listing = (...tools: McpToolRecord[]): McpListing => ({ tools, serverInfo: { name: 'test-server', version: '1.0.0' }, protocolVersion: '2025-11-25' });

describe('MCP installs in the store', () => {
  async function mcpInstall(owner: string, name: string, options: { approval?: McpApproval; allowedTools?: string[] | null; tools?: McpToolRecord[] } = {}) {
    const { db, keyring } = getStack();
    return installMcp(db.models, keyring, {
      owner,
      profile: 'default',
      name,
      url: new URL(`https://user:pw@mcp.example.invalid:8443/mcp?key=${QUERY_SECRET}#frag`),
      headers: { Authorization: HEADER_SECRET, 'X-Version': '2' },
      listing: listing(...(options.tools ?? [tool('read', { readOnlyHint: true }), tool('write'), tool('safe', { destructiveHint: false })])),
      allowedTools: options.allowedTools ?? null,
      approval: options.approval ?? 'destructive',
      allowUpdate: true,
    });
  }

  it('keeps the whole URL and the header values sealed, the shown URL without user info, query or fragment', async () => {
    const me = await signedIn('mcps');
    const { install, created } = await mcpInstall(me.username, 'ev');
    expect(created).to.equal(true);
    expect(install.mcp.url).to.equal('https://mcp.example.invalid:8443/mcp');
    expect(install.mcp.header_names).to.deep.equal(['Authorization', 'X-Version']);
    expect(install.mcp.tools[0]!.inputSchema).to.deep.equal(tool('read').inputSchema);
    const raw = await getStack().db.conn.db!.collection('installations').findOne({ owner: me.username, name: 'ev' });
    const text = JSON.stringify(raw);
    for (const secret of [HEADER_SECRET, QUERY_SECRET, 'user:pw', Buffer.from(HEADER_SECRET).toString('base64')]) expect(text).to.not.include(secret);
    expect(raw!.mcp.headers).to.include.keys(['kid', 'iv', 'tag', 'data']);

    const opened = await loadMcpInstallForCall(getStack().db.models, getStack().keyring, { owner: me.username, profile: 'default', name: 'ev' });
    expect(opened!.url, 'the fragment is never sent, so not kept').to.equal(`https://user:pw@mcp.example.invalid:8443/mcp?key=${QUERY_SECRET}`);
    expect(opened!.headers).to.deep.equal({ Authorization: HEADER_SECRET, 'X-Version': '2' });
    expect(opened!.key, 'names the install, holds no secret').to.match(new RegExp(`^${String(install._id)}:[0-9a-f]{16}$`));
    // saved again (the same URL and headers): a new key, so a worker's pool opens a new session
    const again = await mcpInstall(me.username, 'ev');
    const reopened = await loadMcpInstallForCall(getStack().db.models, getStack().keyring, { owner: me.username, profile: 'default', name: 'ev' });
    expect(again.created).to.equal(false);
    expect(reopened!.key).to.not.equal(opened!.key);
    expect(await loadMcpInstallForCall(getStack().db.models, getStack().keyring, { owner: me.username, profile: 'default', name: 'nope' })).to.equal(null);
  });

  it('lists every install of a profile with the tools a run may offer, servlets and MCP servers alike', async () => {
    const me = await signedIn('mcps');
    await installServlet(me.api, me.username, 'greeter', 'hello');
    await mcpInstall(me.username, 'ev', { allowedTools: ['read', 'safe'] });
    const installs = await installsWithTools(getStack().db.models, me.username, 'default');
    expect(installs.map((i) => [i.kind, i.install.name, i.tools.map((t) => t.name)])).to.deep.equal([
      ['mcp', 'ev', ['read', 'safe']],
      ['servlet', 'hello', ['greet']],
    ]);
  });

  it('decides approval by settings.approval: destructive by the annotation defaults, "*", "none", names, and a stale list fails closed', async () => {
    const me = await signedIn('mcps');
    const { install } = await mcpInstall(me.username, 'ev');
    const [read, write, safe] = install.mcp.tools as [McpToolRecord, McpToolRecord, McpToolRecord];
    const needs = (approval: McpApproval) => [read, write, safe].map((t) => mcpToolNeedsApproval({ ...install, approval }, t));
    expect(needs('destructive')).to.deep.equal([false, true, false]);
    expect(needs('*')).to.deep.equal([true, true, true]);
    expect(needs('none')).to.deep.equal([false, false, false]);
    expect(needs(['read'])).to.deep.equal([true, false, false]);
    expect(needs(['read', 'renamed']), 'a name the server no longer lists').to.deep.equal([true, true, true]);
  });

  it('stores a new listing and keeps the settings, but writes nothing over an install replaced meanwhile', async () => {
    const me = await signedIn('mcps');
    const { db, keyring } = getStack();
    const { install } = await mcpInstall(me.username, 'ev', { allowedTools: ['write'], approval: ['write'] });
    const refreshed = await saveMcpListing(db.models, keyring, install, listing(tool('read')), new Date(install.modified_at.getTime() + 1000));
    expect(refreshed!.mcp.tools.map((t) => t.name)).to.deep.equal(['read']);
    expect(refreshed!.allowed_tools).to.deep.equal(['write']);
    expect(refreshed!.approval).to.deep.equal(['write']);
    const [listed] = await installsWithTools(db.models, me.username, 'default');
    expect(listed!.tools, 'a tool settings.tools names that is gone is not offered').to.deep.equal([]);

    const stale = await saveMcpListing(db.models, keyring, install, listing(tool('other')));
    expect(stale!.mcp.tools.map((t) => t.name), 'read from the install as it was before the last listing').to.deep.equal(['read']);
  });

  it('replaces a servlet install of the same name, and is replaced by one, leaving nothing of the other kind', async () => {
    const me = await signedIn('mcps');
    const { db } = getStack();
    await installServlet(me.api, me.username, 'greeter', 'x');
    const replaced = await mcpInstall(me.username, 'x');
    expect(replaced.created).to.equal(false);
    const doc = await db.models.Installation.findOne({ owner: me.username, name: 'x' }).lean();
    expect([doc!.servlet_owner, doc!.servlet_name, doc!.config]).to.deep.equal([null, null, null]);
    await installServlet(me.api, me.username, 'greeter', 'x');
    const back = await db.models.Installation.findOne({ owner: me.username, name: 'x' }).lean();
    expect(back!.mcp).to.equal(null);
    expect(await findMcpInstall(db.models, { owner: me.username, profile: 'default', name: 'x' })).to.equal(null);
  });

  it('refuses to store a listing larger than 8 MiB, or with schemas nested too deep for the stores', () => {
    expect(listingProblem(listing(tool('a'), tool('b')))).to.equal(undefined);
    const large = listing(...Array.from({ length: 9 }, (_, i) => ({ ...tool(`t${i}`), description: 'x'.repeat(1024 * 1024) })));
    expect(listingProblem(large)).to.equal('its tool list is larger than 8 MiB');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 60; i++) deep = { type: 'object', properties: { x: deep } };
    expect(listingProblem(listing(tool('ok'), { name: 'deep', inputSchema: deep }))).to.match(/^the schemas of its tool "deep" nest deeper than \d+ levels$/);
  });

  it('re-seals the URL and the header values when the master key rotates', async () => {
    const { db, keyring: original } = getStack();
    const me = await signedIn('mcps');
    await mcpInstall(me.username, 'ev');
    const rotated: Keyring = { current: { id: 'k-mcp-next', key: crypto.randomBytes(32) }, retired: [original.current, ...original.retired] };
    try {
      const counts = Object.fromEntries((await rotateSecrets(db.models, rotated)).map((c) => [c.collection, c]));
      expect(counts['installations.mcp.url']!.rotated).to.be.at.least(1);
      expect(counts['installations.mcp.headers']!.rotated).to.be.at.least(1);
      const doc = await db.models.Installation.findOne({ owner: me.username, name: 'ev' }).lean();
      expect([doc!.mcp!.url_sealed!.kid, doc!.mcp!.headers!.kid]).to.deep.equal(['k-mcp-next', 'k-mcp-next']);
      const opened = await loadMcpInstallForCall(db.models, rotated, { owner: me.username, profile: 'default', name: 'ev' });
      expect(opened!.headers.Authorization).to.equal(HEADER_SECRET);
    } finally {
      // back under the stack's key, for later tests and the running API
      await rotateSecrets(db.models, { current: original.current, retired: [rotated.current] });
    }
  });
});
