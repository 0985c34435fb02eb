import crypto from 'node:crypto';
import { temporal as proto } from '@temporalio/proto';
import { expect } from 'chai';
import { until } from '../helpers/runs';
import { everythingServer } from '../helpers/mcp-everything';
import { startOAuthServers, type OAuthServers } from '../helpers/mcp-oauth-server';
import { installServlet } from '../helpers/servlets';
import { trigger } from './client';
import { expectAllEndOnce, runsOf } from './runs';
import { faultStack, faultTask, faultUser, temporalClient } from './harness';
import { ledger, type AcceptedRun } from './ledger';

const STARTED = proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/** Whether a run's workflow has a `callTool` activity running on a worker right now. */
async function toolCallRunning(run: AcceptedRun): Promise<boolean> {
  const description = await (await temporalClient()).workflow.getHandle(run.workflowId).describe();
  return (description.raw.pendingActivities ?? []).some((a) => a.activityType?.name === 'callTool' && a.state === STARTED);
}

describe('faults: the worker dies', () => {
  let oauth: OAuthServers | undefined;
  before(() => (ledger.scenario = 'worker'));
  after(async () => {
    // The tokens the worker and the API were given are secrets too: the final scan looks for them everywhere.
    for (const token of oauth?.stats.bearerSeen ?? []) ledger.secret('mcp secret', token);
    await oauth?.close();
  });

  it('ends every run once when the worker is SIGKILLed with provider calls and servlet calls in flight, and started again', async function () {
    this.timeout(300_000);
    const { api, username } = await faultUser('wk');
    const { script, worker } = faultStack();
    // Install configuration is a secret of its own: the scan looks for it everywhere.
    const secret = () => ledger.secret('install secret', `cfg-fault-${crypto.randomBytes(12).toString('hex')}`);
    await installServlet(api, username, 'greeter', 'hello', { greeting: 'Hi', token: secret() });
    await installServlet(api, username, 'infinite-loop', 'spin', { token: secret() });
    // A 100 KiB tool result: stored in MongoDB (run_blobs) rather than in history, and scanned there at the end.
    await installServlet(api, username, 'bulk', 'bulk', { kib: '100', token: secret() });
    // An MCP install's header value and URL query are secrets no answer shows, not even to the owner: the final scan
    // finds them nowhere (server-everything ignores both).
    const everything = (await everythingServer()).url;
    const header = ledger.secret('mcp secret', `Bearer mcp-fault-${crypto.randomBytes(12).toString('hex')}`);
    const query = ledger.secret('mcp secret', `mq-fault-${crypto.randomBytes(12).toString('hex')}`);
    const mcp = await api.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: `${everything}?key=${query}`, headers: { Authorization: header } } });
    expect(mcp.status, mcp.text).to.equal(201);
    expect((await api.post('/api/profiles/~/default/installations/ev/refresh')).status).to.equal(200);
    // An install with OAuth client credentials: its client secret, and the tokens it gets (after the scenario), are
    // secrets no answer shows either.
    oauth = await startOAuthServers();
    const clientSecret = ledger.secret('mcp secret', `cs-fault-${crypto.randomBytes(12).toString('hex')}`);
    oauth.client('fault-oauth', { secret: clientSecret });
    const oa = await api.post('/api/profiles/~/default/installations', { name: 'oa', mcp: { url: oauth.mcpUrl, oauth: { client_id: 'fault-oauth', client_secret: clientSecret } } });
    expect(oa.status, oa.text).to.equal(201);
    const openai = await faultTask(api, 'wk-openai');
    const claude = await faultTask(api, 'wk-claude', { runner: 'anthropic' });

    // Servlet calls that end normally, before any fault.
    for (const name of ['w-greet-1', 'w-greet-2']) expect((await trigger(openai, `tool:hello__greet ${name}`, name)).status).to.equal(201);
    expect((await trigger(openai, 'tool:bulk__bulk w-bulk', 'w-bulk')).status).to.equal(201);
    expect((await trigger(openai, 'tool:oa__whoami w-oauth', 'w-oauth')).status).to.equal(201);
    const before = await expectAllEndOnce(runsOf('worker'));
    expect(oauth.stats.calls, 'the MCP call made with the OAuth token').to.equal(1);
    for (const [id, run] of before) {
      const answer = run.results.at(-1).lastMessage.content as string;
      if (id.endsWith('/w-bulk')) expect(answer.length, 'the stored tool result, resolved').to.be.greaterThan(100 * 1024);
      else if (id.endsWith('/w-oauth')) expect(answer).to.match(/^tool said: /);
      else expect(answer).to.match(/^tool said: Hi, w-greet-\d!$/);
    }

    // Provider calls held by the fake, and servlet calls that compute until SERVLET_CALL_TIMEOUT_MS.
    const held = Array.from({ length: 8 }, (_, i) => `w-p-${i}`);
    const spins = Array.from({ length: 3 }, (_, i) => `w-s-${i}`);
    await Promise.all([
      ...held.map(async (name, i) => expect((await trigger(i % 2 ? claude : openai, `hold:wk ${name}`, name)).status).to.equal(201)),
      ...spins.map(async (name) => expect((await trigger(openai, `tool:spin__spin ${name}`, name)).status).to.equal(201)),
    ]);
    const spinRuns = runsOf('worker').filter((r) => spins.some((s) => r.workflowId.endsWith(`/${s}`)));
    await until('every held provider call in flight', () => script.waiting('wk') === held.length, 60_000);
    await until('a servlet call running on the worker', async () => (await Promise.all(spinRuns.map(toolCallRunning))).some(Boolean), 60_000);

    await worker.kill();
    ledger.fault('worker SIGKILL');
    // The held calls now answer into connections of a dead worker; the new worker must make them again (nothing
    // between the kill and the start can fail; should the start, the root hooks start it before the next scenario).
    script.open('wk');
    await worker.start();

    // A lost servlet call is noticed after its 30 s heartbeat timeout (workflows/limits.ts TOOL_CALL), then made again.
    const closed = await expectAllEndOnce(runsOf('worker'), 180_000);
    for (const name of held) {
      const run = [...closed.entries()].find(([id]) => id.endsWith(`/${name}`))![1];
      expect(run.results.map((e: any) => e.msg).some((m: string) => /worker calling the provider was lost; retrying/.test(m)), `${name}: ${JSON.stringify(run.results)}`).to.equal(true);
    }
  });
});
