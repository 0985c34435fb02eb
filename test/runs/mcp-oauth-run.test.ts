import crypto from 'node:crypto';
import { expect } from 'chai';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { startOAuthServers, type OAuthServers } from '../helpers/mcp-oauth-server';
import { createTask, historyText, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { runWorkflowId } from '../../src/temporal/ids';

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');

/** The worker and API of these tests: loopback MCP and authorization servers are allowed to them, on a queue of their own. */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `mcp-oauth-${crypto.randomBytes(4).toString('hex')}` };

/**
 * Runs calling a tool of an install with `mcp.oauth` (client credentials), against the loopback authorization server
 * and protected MCP server of test/helpers/mcp-oauth-server.ts. The token endpoint is discovered (no `token_url`).
 */
describe('runs: tools of an MCP server that wants OAuth client credentials', function () {
  this.timeout(60_000);
  let oauth: OAuthServers;
  before(async () => {
    oauth = await startOAuthServers();
  });
  after(() => oauth?.close());
  const server = useOwnWorkerAndApi(SETTINGS);

  /** A user of this file's API with the protected server installed as `sec` with a client of its own, and a task `ask`. */
  async function userWithClient(clientId: string, secret: string) {
    const { username, sessionId } = await signedIn();
    const api = apiFor(sessionId, server.url);
    oauth.client(clientId, { secret });
    const installed = await api.post('/api/profiles/~/default/installations', { name: 'sec', mcp: { url: oauth.mcpUrl, oauth: { client_id: clientId, client_secret: secret } } });
    expect(installed.status, installed.text).to.equal(201);
    await createTask(api, 'default', 'ask');
    return { api, username };
  }

  /** A run of `ask` whose model calls `sec__whoami` and answers with what the tool said. */
  async function runWhoami(api: Api): Promise<{ run: any; url: string }> {
    getStack().fake.script([openaiToolCall([{ name: 'sec__whoami', arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const res = await postSigned(await signedUrl(api, 'default', 'ask'), { text: 'x' });
    expect(res.status, res.text).to.equal(201);
    return { run: await waitForRun(api, res.body.url), url: res.body.url };
  }

  it('calls the tool with the token its client credentials got, ends ready, and keeps the secret and the token out of the run', async () => {
    const secret = `secret-${crypto.randomBytes(8).toString('hex')}`;
    const { api, username } = await userWithClient('run-client', secret);
    const calls = oauth.stats.calls;
    const { run, url } = await runWhoami(api);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    // The server names the client of the token the call carried.
    expect(run.results.at(-1).lastMessage.content).to.equal('final: client run-client');
    expect(oauth.stats.calls - calls).to.equal(1);
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'ask', run: url.split('/').at(-1)! });
    const history = await historyText(getStack().temporal, id);
    for (const s of [secret, ...oauth.stats.bearerSeen]) {
      expect(history).not.to.include(s);
      expect(JSON.stringify(run)).not.to.include(s);
      expect(JSON.stringify(getStack().fake.requests)).not.to.include(s);
    }
  });

  it('gets a new token for the next run\'s call when the server refuses the one it had: a 401 forces a new token', async () => {
    const { api } = await userWithClient('revoked-client', `secret-${crypto.randomBytes(8).toString('hex')}`);
    const first = await runWhoami(api);
    expect(first.run.status, JSON.stringify(first.run.results)).to.equal('ready');
    const issued = oauth.stats.issued['revoked-client'] ?? 0;
    const refused = oauth.stats.unauthorized;
    oauth.revokeAll();
    getStack().fake.reset();
    const second = await runWhoami(api);
    expect(second.run.status, JSON.stringify(second.run.results)).to.equal('ready');
    expect(second.run.results.at(-1).lastMessage.content).to.equal('final: client revoked-client');
    expect(oauth.stats.unauthorized - refused, 'the revoked token was refused').to.be.greaterThan(0);
    expect((oauth.stats.issued['revoked-client'] ?? 0) - issued, 'one new token').to.equal(1);
  });
});
