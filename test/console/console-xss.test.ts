import { expect } from 'chai';
import { signedIn } from '../helpers/api';
import { useBrowser } from '../helpers/browser';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { checkPage, shows, signInByLink, statusBecomes } from './console-pages';
import { scriptProbe } from './script-probe';

const IMG = "<img src=x onerror=ptrProbe('img')>";
const MARKDOWN_LINK = "[click me](javascript:ptrProbe('markdown'))";
const HTML_LINK = "<a href=javascript:ptrProbe('html')>html link</a>";
/** What the greeter servlet is asked to greet: its result echoes it ("Hello, <name>!"). */
const TOOL_INPUT = `${IMG} [tool link](javascript:ptrProbe('tool-markdown')) <a href=javascript:ptrProbe('tool-html')>tool html</a>`;
const ANSWER = `Answer: ${IMG} ${MARKDOWN_LINK} ${HTML_LINK}`;

const answered = (req: RecordedRequest) => (req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** Run content is text: markup and `javascript:` links in a model's answer and a tool's result never become elements. */
describe('the console showing hostile run content', function () {
  this.timeout(120_000);
  const b = useBrowser();
  afterEach(() => getStack().fake.reset());

  it('shows markup and javascript: links from a model answer and a tool result as text, and runs no script of theirs', async () => {
    const { sessionId, username, api: me } = await signedIn('e2e-xss');
    await installServlet(me, username, 'greeter', 'hello');
    await createTask(me, 'default', 'xss');
    getStack().fake.script((req) => (answered(req) ? openaiText(ANSWER) : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: TOOL_INPUT } }])));
    const trigger = await postSigned(await signedUrl(me, 'default', 'xss'), { text: 'x' }, { 'run-id': 'x1' });
    expect(trigger.status, trigger.text).to.be.oneOf([200, 201, 202]);
    const run = await waitForRun(me, trigger.body.url as string);
    expect(run.status).to.equal('ready');
    expect(JSON.stringify(run.results), 'the tool result echoes the markup').to.contain(`Hello, ${IMG}`);

    const probe = await scriptProbe(b.context);
    await signInByLink(b.page, sessionId);
    await b.page.goto(`${getStack().apiUrl}/console/runs/default/xss/x1`);
    await statusBecomes(b.page, 'ready');
    // Unfold every folded entry (tool calls and results), as a person reading them would.
    for (const summary of await b.page.getByRole('main').locator('summary').all()) await summary.click();
    await shows(b.page, ANSWER);
    await shows(b.page, new RegExp(`Hello, ${IMG.replace(/[()[\]]/g, '\\$&')}`));

    // An image of the page's own that fails as `src=x` would, its handler set from outside the page: once it has
    // called, any `onerror` of an element made from run content had its chance too.
    await b.page.evaluate(`{ const control = new Image(); control.onerror = () => ${probe.name}('control'); control.src = 'x'; }`);
    await probe.waitFor('control');
    expect(probe.calls, 'no script from the run content ran').to.deep.equal(['control']);

    const main = b.page.getByRole('main');
    expect(await main.locator('img').count(), 'no image element').to.equal(0);
    expect(await b.page.locator('[href^="javascript:" i], [src^="javascript:" i], [onerror]').count(), 'no javascript: link, no handler').to.equal(0);
    for (const name of ['click me', 'html link', 'tool link', 'tool html']) {
      expect(await b.page.getByRole('link', { name }).count(), `no link "${name}"`).to.equal(0);
    }
    await checkPage(b.page, 'run-hostile-content');
  });
});
