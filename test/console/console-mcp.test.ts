import crypto from 'node:crypto';
import { expect } from 'chai';
import { api, signedIn, useOwnWorkerAndApi } from '../helpers/api';
import { useBrowser } from '../helpers/browser';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { everythingServer } from '../helpers/mcp-everything';
import { createTask } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { checkPage, goTo, runOf, RUN_WAIT_MS, shows, signInByLink, statusBecomes } from './console-pages';

const ASK = 'ev__trigger-elicitation-request';
const toolText = (req: RecordedRequest) => String((req.body.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'tool')?.content ?? '');

/** An MCP server (server-everything on loopback) installed, tested and answered from the console. */
describe('the console with an MCP server', function () {
  this.timeout(120_000);
  // A worker and an API of the describe's own that may call loopback MCP servers.
  const own = useOwnWorkerAndApi({ MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `console-mcp-${crypto.randomBytes(4).toString('hex')}` });
  const b = useBrowser();

  it('installs an MCP server, tests its connection, and answers its input request from the generated form', async () => {
    const { sessionId } = await signedIn('e2e-mcp');
    const me = api(sessionId, own.url);
    await createTask(me, 'default', 'ask', { prompt: 'Ask me' });
    getStack().fake.script([openaiToolCall([{ id: 'call_1', name: ASK, arguments: {} }]), (req) => openaiText(`final: ${toolText(req)}`)]);
    await signInByLink(b.page, sessionId, own.url);

    await goTo(b.page, 'Profiles', 'Profiles');
    await b.page.getByRole('main').getByRole('link', { name: 'default' }).click();
    await b.page.getByRole('heading', { level: 1, name: 'Profile default' }).waitFor();
    await b.page.getByLabel('An MCP server').check();
    await b.page.getByLabel('Server URL (Streamable HTTP)').fill((await everythingServer()).url);
    await b.page.getByLabel(/^Install name/).fill('ev');
    await b.page.getByRole('button', { name: 'Install', exact: true }).click();
    await b.page.getByRole('heading', { level: 3, name: 'ev' }).waitFor();
    await b.page.getByRole('button', { name: 'Test connection' }).click();
    await shows(b.page, /^Connected:/);
    await checkPage(b.page, 'profile-mcp');
    const installs = await me.get('/api/profiles/~/default/installations');
    expect(JSON.stringify(installs.body)).to.contain('"ev"');

    await goTo(b.page, 'Tasks', 'Tasks');
    await b.page.getByRole('link', { name: 'ask', exact: true }).click();
    await b.page.getByRole('button', { name: 'Trigger run' }).click();
    const form = b.page.getByRole('form', { name: 'Answer' });
    await form.waitFor({ timeout: RUN_WAIT_MS });
    await statusBecomes(b.page, 'pending');
    await checkPage(b.page, 'run-input-form');
    await form.getByLabel('String (required)').fill('Ada Lovelace');
    await form.getByLabel(/^Boolean/).check();
    await form.getByRole('button', { name: 'Send answer' }).click();

    await statusBecomes(b.page, 'ready');
    await shows(b.page, /^final: /);
    expect(await b.page.getByRole('main').textContent()).to.contain('Ada Lovelace');
    expect(toolText(getStack().fake.requests.at(-1)!), 'the answer the server got, as the model was told').to.contain('Ada Lovelace');
    const { run } = runOf(b.page);
    expect((await me.get(`/api/runs/~/default/ask/${run}`)).body.status).to.equal('ready');
  });
});
