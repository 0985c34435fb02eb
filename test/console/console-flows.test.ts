import { expect } from 'chai';
import type { Locator, Page } from 'playwright-core';
import { api, signedIn } from '../helpers/api';
import { useBrowser } from '../helpers/browser';
import { lastUserText, openaiText, openaiToolCall, providerError, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { checkPage, goTo, mainNav, runOf, RUN_WAIT_MS, shows, signInByLink, statusBecomes } from './console-pages';

/** The tool messages the model was sent back, in order. */
const toolMessages = (req: RecordedRequest) => (req.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === 'tool');

/** Presses Tab until `target` has the focus (at most `limit` times): the way a keyboard user reaches it. */
async function tabTo(page: Page, target: Locator, limit = 80): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((el) => el === el.ownerDocument.activeElement)) return;
  }
  throw new Error(`Tab never reached ${target.toString()} in ${limit} presses`);
}

/** A person's flows in the console, in a real browser, every element found by its role and accessible name. */
describe('the console in a browser', function () {
  this.timeout(120_000);
  const b = useBrowser();
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('shows the sign-in page without a session, and signs in by a one-time link whose token leaves the address', async () => {
    await b.page.goto(`${getStack().apiUrl}/console/tasks`);
    await b.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect(await b.page.getByRole('main').textContent()).to.contain('npm run session -- create --user NAME');
    await checkPage(b.page, 'sign-in');

    const { sessionId, username } = await signedIn('e2e');
    await signInByLink(b.page, sessionId);
    expect(new URL(b.page.url()).hash, 'the token is removed from the address').to.equal('');
    expect(await mainNav(b.page).getByRole('link').allTextContents()).to.deep.equal(['Tasks', 'Profiles', 'Schedules', 'Signed URLs', 'Tokens']);
    const cookie = (await b.context.cookies(getStack().apiUrl)).find((c) => c.name === 'sessionId');
    expect(cookie, 'the session cookie').to.include({ httpOnly: true, sameSite: 'Lax' });
    expect(cookie!.value, 'a new session, not the one that asked for the link').to.not.equal(sessionId);
    expect((await api(cookie!.value).get('/api/users/~')).body.username).to.equal(username);

    await b.page.getByRole('button', { name: 'Sign out' }).click();
    await b.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    expect((await b.context.cookies(getStack().apiUrl)).map((c) => c.name), 'the cookie is cleared').to.not.include('sessionId');
    // The API caches sessions for a moment (SESSION_CACHE_MS): the revoked one is refused once that has passed.
    await until('the session refused', async () => (await api(cookie!.value).get('/api/users/~')).status === 401);
  });

  it('creates a task from the form, triggers it from the form, shows the run reach ready with its answer, and deletes it', async () => {
    const { sessionId } = await signedIn('e2e');
    getStack().fake.script((req) => openaiText(`A poem about ${lastUserText(req)}`));
    await signInByLink(b.page, sessionId);
    await b.page.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor();
    await checkPage(b.page, 'tasks-empty');

    await b.page.getByRole('main').getByRole('link', { name: 'New task' }).click();
    await b.page.getByRole('heading', { level: 1, name: 'New task' }).waitFor();
    await b.page.getByLabel('Name', { exact: true }).fill('haiku');
    await b.page.getByLabel('Model', { exact: true }).fill('test-model');
    await b.page.getByLabel(/Provider key of this task/).fill('sk-test-key-0123456789abcdef');
    await b.page.getByLabel('Prompt template (Mustache)').fill('Write about {{ topic }}');
    await b.page.getByLabel('Sample value for topic').fill('tides');
    await b.page.getByLabel('Priority of its runs when the service is busy').selectOption('2');
    await shows(b.page, 'Write about tides');
    await checkPage(b.page, 'new-task');
    await b.page.getByRole('button', { name: 'Create task' }).click();

    await b.page.getByRole('heading', { name: 'Trigger a run' }).waitFor();
    const task = await api(sessionId).get('/api/tasks/~/default/haiku');
    expect(task.status, task.text).to.equal(200);
    expect(task.body.openai.prompt).to.equal('Write about {{ topic }}');
    expect(task.body.settings.priority, 'the priority chosen in the form').to.equal(2);
    await checkPage(b.page, 'task');
    await b.page.getByLabel('Trigger data (JSON object)').fill('{"topic": "the sea"}');
    await b.page.getByRole('button', { name: 'Trigger run' }).click();

    await statusBecomes(b.page, 'ready');
    await shows(b.page, 'A poem about Write about the sea');
    const { run } = runOf(b.page);
    const stored = await api(sessionId).get(`/api/runs/~/default/haiku/${run}`);
    expect(stored.body.status).to.equal('ready');
    expect(JSON.stringify(stored.body.results)).to.contain('A poem about Write about the sea');
    await checkPage(b.page, 'run-ready');

    await b.page.getByRole('button', { name: 'Delete run' }).click();
    await b.page.getByRole('heading', { name: 'Trigger a run' }).waitFor();
    expect((await api(sessionId).get(`/api/runs/~/default/haiku/${run}`)).status, 'the run is gone').to.equal(404);

    await goTo(b.page, 'Tasks', 'Tasks');
    await b.page.getByRole('link', { name: 'haiku', exact: true }).waitFor();
    await checkPage(b.page, 'tasks');
  });

  it('installs a servlet with approval on, then approves one gated call and denies another with a reason, from the keyboard', async () => {
    const { sessionId, username, api: me } = await signedIn('e2e');
    // Published but not installed: the console installs it.
    await installServlet(me, username, 'greeter', 'published');
    expect((await me.delete('/api/profiles/~/default/installations/published')).status).to.be.oneOf([200, 204]);
    await createTask(me, 'default', 'greet', { prompt: 'Greet {{ text }}' });
    getStack().fake.script((req) => {
      const answered = toolMessages(req).length;
      if (answered === 0) return openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]);
      if (answered === 1) return openaiToolCall([{ id: 'c2', name: 'hello__greet', arguments: { name: 'Bob' } }]);
      return openaiText(`Done: ${toolMessages(req).map((m) => String(m.content)).join(' / ')}`);
    });
    await signInByLink(b.page, sessionId);

    await goTo(b.page, 'Profiles', 'Profiles');
    await checkPage(b.page, 'profiles');
    await b.page.getByRole('main').getByRole('link', { name: 'default' }).click();
    await b.page.getByRole('heading', { level: 1, name: 'Profile default' }).waitFor();
    await b.page.getByLabel('Servlet (owner/name)').fill(`${username}/greeter`);
    await b.page.getByLabel(/^Install name/).fill('hello');
    await b.page.getByLabel(/approval/i).fill('greet');
    await b.page.getByRole('button', { name: 'Install', exact: true }).click();
    await b.page.getByRole('heading', { level: 3, name: 'hello' }).waitFor();
    const installs = await me.get('/api/profiles/~/default/installations');
    expect(installs.status, installs.text).to.equal(200);
    expect(JSON.stringify(installs.body)).to.match(/"hello"/).and.match(/"greet"/);
    await checkPage(b.page, 'profile');

    await goTo(b.page, 'Tasks', 'Tasks');
    await b.page.getByRole('link', { name: 'greet', exact: true }).click();
    await b.page.getByLabel('Trigger data (JSON object)').fill('{"text": "everyone"}');
    await b.page.getByRole('button', { name: 'Trigger run' }).click();

    const panel = b.page.getByRole('region', { name: /Approval needed/ });
    await panel.filter({ hasText: 'Ann' }).waitFor({ timeout: RUN_WAIT_MS });
    await statusBecomes(b.page, 'pending');
    await checkPage(b.page, 'run-pending-approval');
    // The keyboard only: Tab to "Approve", Enter.
    await tabTo(b.page, b.page.getByRole('button', { name: 'Approve' }));
    await b.page.keyboard.press('Enter');

    await panel.filter({ hasText: 'Bob' }).waitFor({ timeout: RUN_WAIT_MS });
    await tabTo(b.page, b.page.getByLabel('Reason'));
    await b.page.keyboard.type('not Bob today');
    await tabTo(b.page, b.page.getByRole('button', { name: 'Deny' }));
    await b.page.keyboard.press('Space');

    await statusBecomes(b.page, 'ready');
    await shows(b.page, /^Done: /);
    const last = getStack().fake.requests.at(-1)!;
    const results = toolMessages(last).map((m) => String(m.content));
    expect(results[0]).to.contain('Hello, Ann!');
    expect(results[1]).to.contain('not Bob today').and.not.contain('Hello, Bob');
    const { run } = runOf(b.page);
    const stored = await me.get(`/api/runs/~/default/greet/${run}`);
    expect(stored.body.status).to.equal('ready');
  });

  it('cancels a live run from its page, then offers to delete it', async () => {
    const { sessionId, username, api: me } = await signedIn('e2e');
    await createTask(me, 'default', 'slow');
    getStack().fake.script([{ hang: true }]);
    await signInByLink(b.page, sessionId);
    await b.page.getByRole('link', { name: 'slow', exact: true }).click();
    await b.page.getByRole('button', { name: 'Trigger run' }).click();
    await statusBecomes(b.page, 'running');
    await until('the provider called', () => getStack().fake.requests.length > 0);
    await b.page.getByRole('button', { name: 'Cancel run' }).click();

    await b.page.getByRole('button', { name: 'Delete run' }).waitFor({ timeout: RUN_WAIT_MS });
    await statusBecomes(b.page, 'error');
    await shows(b.page, `Error: cancelled by ${username}`);
    const { run } = runOf(b.page);
    const stored = await me.get(`/api/runs/~/default/slow/${run}`);
    expect(stored.body.status, stored.text).to.equal('error');
    expect(await b.page.getByRole('button', { name: 'Cancel run' }).count()).to.equal(0);
  });

  it('replays a run from its page with another model, its tool answered from the record, and shows the difference', async () => {
    const { sessionId, username, api: me } = await signedIn('e2e');
    await installServlet(me, username, 'greeter', 'hello');
    await createTask(me, 'default', 'greet', { prompt: 'Greet {{ text }}' });
    getStack().fake.script((req) => {
      if (toolMessages(req).length === 0) return openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]);
      return openaiText(`${String(req.body.model)} says: ${String(toolMessages(req)[0]!.content)}`);
    });
    const triggered = await postSigned(await signedUrl(me, 'default', 'greet'), { text: 'Ann' }, { 'run-id': 'first' });
    expect(triggered.status, triggered.text).to.equal(201);
    expect((await waitForRun(me, triggered.body.url)).status).to.equal('ready');
    const calls = getStack().fake.requests.length;

    await signInByLink(b.page, sessionId);
    await b.page.goto(`${getStack().apiUrl}/console/runs/default/greet/first`);
    await statusBecomes(b.page, 'ready');
    await b.page.getByText('Replay this run').click();
    await b.page.getByLabel('Tool calls').selectOption('recorded');
    await b.page.getByLabel(/^Model/).fill('other-model');
    await b.page.getByRole('button', { name: 'Replay run' }).click();

    await b.page.getByRole('heading', { level: 1, name: 'Run first.r1' }).waitFor();
    await statusBecomes(b.page, 'ready');
    await shows(b.page, 'model other-model');
    const difference = b.page.getByRole('region', { name: 'Difference from first' });
    await difference.getByText('Same (recorded result)').waitFor({ timeout: RUN_WAIT_MS });
    const lines = await difference.getByLabel("The answers' unified diff").textContent();
    expect(lines).to.contain('-test-model says: Hello, Ann!').and.contain('+other-model says: Hello, Ann!');
    await b.page.getByText('(recorded result: the tool was not called)').first().waitFor();
    // Two model calls, no tool call: the greeter answered from the original's record.
    expect(getStack().fake.requests.length - calls).to.equal(2);
    const replay = await me.get('/api/runs/~/default/greet/first.r1');
    expect(replay.body).to.include({ replay_of: 'first', status: 'ready' });
    expect(replay.body.usage.tool_calls, 'a recorded result is not a tool call').to.equal(0);
    await checkPage(b.page, 'run-replay-diff');
  });

  it('starts an eval of a task from its page and shows its scorecard, each replay leading to its difference', async () => {
    const { sessionId, api: me } = await signedIn('e2e');
    await createTask(me, 'default', 'poem');
    getStack().fake.script((req) => openaiText(`${String(req.body.model)}: ${lastUserText(req)}`));
    const url = await signedUrl(me, 'default', 'poem');
    for (const name of ['a', 'b', 'c']) {
      const triggered = await postSigned(url, { text: name }, { 'run-id': name });
      expect(triggered.status, triggered.text).to.equal(201);
      expect((await waitForRun(me, triggered.body.url)).status).to.equal('ready');
    }

    await signInByLink(b.page, sessionId);
    await b.page.getByRole('link', { name: 'poem', exact: true }).click();
    await b.page.getByText('Start an eval').click();
    await b.page.getByLabel(/last closed runs/).fill('3');
    await b.page.getByLabel(/^Variants/).fill('base\nother other-model');
    await b.page.getByLabel(/contains/).fill('other-model');
    await b.page.getByRole('button', { name: 'Start eval' }).click();

    await b.page.getByRole('heading', { level: 1, name: /^Eval / }).waitFor();
    await statusBecomes(b.page, 'ready');
    const scorecard = b.page.getByRole('table', { name: 'Scorecard' });
    const cells = async (variant: string) => scorecard.getByRole('row', { name: new RegExp(`^${variant}`) }).getByRole('cell').allTextContents();
    // Model, runs done, checks passed ("contains other-model"), then tokens and the median duration.
    expect((await cells('base')).slice(0, 3)).to.deep.equal(["the task's", '3 of 3', '0 of 3']);
    expect((await cells('other')).slice(0, 3)).to.deep.equal(['other-model', '3 of 3', '3 of 3']);
    await checkPage(b.page, 'eval');

    const id = new URL(b.page.url()).pathname.split('/').pop()!;
    await b.page.getByRole('link', { name: `${id}.other.a` }).click();
    await b.page.getByRole('heading', { level: 1, name: `Run ${id}.other.a` }).waitFor();
    const lines = await b.page.getByRole('region', { name: 'Difference from a' }).getByLabel("The answers' unified diff").textContent({ timeout: RUN_WAIT_MS });
    expect(lines).to.contain('-test-model: Say a').and.contain('+other-model: Say a');
  });

  it('lists a task\'s runs of the status chosen, as the API filters them', async () => {
    const { sessionId, api: me } = await signedIn('e2e');
    await createTask(me, 'default', 'mixed', { prompt: 'Say {{ text }}' });
    getStack().fake.script((req) => (lastUserText(req).includes('bad') ? providerError('openai', 400, 'no such model') : openaiText('done')));
    const url = await signedUrl(me, 'default', 'mixed');
    for (const run of ['good-1', 'bad', 'good-2']) {
      const res = await postSigned(url, { text: run }, { 'run-id': run });
      await waitForRun(me, res.body.url as string);
    }
    await signInByLink(b.page, sessionId);
    await b.page.getByRole('link', { name: 'mixed', exact: true }).click();
    const runs = b.page.getByRole('table', { name: /Runs, newest first/ });
    const listed = async () => (await runs.getByRole('link').allTextContents()).sort();
    await until('every run listed', async () => (await listed()).length === 3);
    // The API filters (a page of 20 holds that status's runs, not only those among the newest 20).
    const asked = b.page.waitForRequest((req) => new URL(req.url()).searchParams.get('status') === 'error');
    await b.page.getByLabel('Status').selectOption('error');
    await asked;
    await until('only the failed run', async () => JSON.stringify(await listed()) === JSON.stringify(['bad']));
    await b.page.getByLabel('Status').selectOption('ready');
    await until('only the runs that ended ready', async () => JSON.stringify(await listed()) === JSON.stringify(['good-1', 'good-2']));
    await b.page.getByLabel('Status').selectOption('running');
    await shows(b.page, 'No runs with status running.');
  });

  it('creates a schedule every 5s and shows its first run', async () => {
    const { sessionId, api: me } = await signedIn('e2e');
    await createTask(me, 'default', 'tick', { prompt: 'Tick {{ n }}' });
    getStack().fake.script((req) => openaiText(`tock after ${lastUserText(req)}`));
    await signInByLink(b.page, sessionId);
    await goTo(b.page, 'Schedules', 'Schedules');
    await b.page.getByLabel('Task').selectOption('default/tick');
    await b.page.getByLabel('Name').fill('every5');
    await b.page.getByLabel(/^Every/).fill('5s');
    await b.page.getByLabel('Trigger data (JSON object)').fill('{"n": 1}');
    await b.page.getByRole('button', { name: 'Create schedule' }).click();
    await shows(b.page, 'every 5s');
    await shows(b.page, /^Next fire times: \d/);
    await checkPage(b.page, 'schedules');
    try {
      // The page reads the schedules again every 5 s: the first run shows up as a link.
      const first = b.page.getByRole('main').getByText('Recent runs:').getByRole('link').first();
      await first.waitFor({ timeout: RUN_WAIT_MS });
      await first.click();
      await statusBecomes(b.page, 'ready');
      await shows(b.page, 'tock after Tick 1');
    } finally {
      // A schedule left firing would take the fake provider's replies meant for the next tests.
      const removed = await me.delete('/api/tasks/~/default/tick/schedules/every5');
      expect(removed.status, removed.text).to.equal(204);
    }
  });

  it('creates and revokes a signed URL and an access token', async () => {
    const { sessionId, api: me } = await signedIn('e2e');
    await createTask(me, 'default', 'signed');
    await signInByLink(b.page, sessionId);

    await goTo(b.page, 'Signed URLs', 'Signed URLs');
    await b.page.getByLabel('Task').selectOption('default/signed');
    await b.page.getByRole('button', { name: 'Create signed URL' }).click();
    const field = b.page.getByLabel('Signed URL 1');
    await field.waitFor();
    const url = await field.inputValue();
    expect(url).to.match(/^http:\/\/127\.0\.0\.1:\d+\//);
    await checkPage(b.page, 'signed-urls');
    await b.page.getByRole('button', { name: 'Revoke' }).click();
    await b.page.getByLabel('Signed URL 1 (revoked)').waitFor();
    const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text": "x"}' });
    expect(refused.status, 'the revoked URL no longer triggers').to.be.oneOf([401, 403, 404]);

    await goTo(b.page, 'Tokens', 'Access tokens');
    await b.page.getByLabel('Name').fill('cli');
    await b.page.getByRole('button', { name: 'Create token' }).click();
    const token = await b.page.getByLabel('Token', { exact: true }).inputValue();
    const asToken = () => fetch(`${getStack().apiUrl}/api/tasks/~/default/signed`, { headers: { authorization: `Bearer ${token}` } });
    expect((await asToken()).status, 'the new token works').to.equal(200);
    await checkPage(b.page, 'tokens');
    await b.page.getByRole('table', { name: 'Your tokens' }).getByRole('button', { name: 'Revoke' }).click();
    await shows(b.page, /revoked/);
    await until('the token refused', async () => (await asToken()).status === 401);
  });
});
