import { expect } from 'chai';
import { signedIn, type Api } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';

const answered = (req: RecordedRequest) => (req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

/** Triggers `task` of the default profile with `text`; returns the run's URL. */
async function trigger(api: Api, task: string, run: string, text: string): Promise<string> {
  const res = await postSigned(await signedUrl(api, 'default', task), { text }, { 'run-id': run });
  expect(res.status, res.text).to.equal(201);
  return res.body.url as string;
}

describe('pending approvals across runs (GET /api/approvals/~)', () => {
  let me: { username: string; api: Api };
  beforeEach(() => getStack().fake.reset());
  after(() => getStack().fake.reset());

  before(async () => {
    me = await signedIn('approvals');
    await installServlet(me.api, me.username, 'greeter', 'hello');
    const gated = await me.api.post('/api/profiles/~/default/installations', { servlet_slug: `${me.username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
    expect(gated.status, gated.text).to.equal(200);
    await createTask(me.api, 'default', 'ask-a');
    await createTask(me.api, 'default', 'ask-b');
  });

  it('lists each run waiting on a tool call, oldest first, with what a decision needs, and drops it once decided', async () => {
    const { fake } = getStack();
    // Each run's first call asks for the tool with the prompt as its argument; once the tool answered, the model ends.
    fake.script((req) => (answered(req) ? openaiText('done') : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: lastUserText(req) } }])));
    const empty = await me.api.get('/api/approvals/~');
    expect(empty.status, empty.text).to.equal(200);
    expect(empty.body).to.deep.equal({ approvals: [] });

    const a = await trigger(me.api, 'ask-a', 'r1', 'Ann');
    await until('the first ask', async () => (await me.api.get('/api/approvals/~')).body.approvals.length === 1);
    const big = 'x'.repeat(70 * 1024);
    const b = await trigger(me.api, 'ask-b', 'r2', big);
    const listed = await until('both asks', async () => {
      const res = await me.api.get('/api/approvals/~');
      return res.body.approvals.length === 2 && res.body.approvals;
    });
    expect(listed.map((p: any) => p.run_url)).to.deep.equal([a, b]);
    const [first, second] = listed;
    expect(first).to.have.keys(['run_url', 'kind', 'id', 'tool', 'arguments', 'asked_at']);
    expect(first).to.deep.include({ kind: 'approval', tool: 'hello__greet', arguments: { name: 'Say Ann' } });
    expect(new Date(first.asked_at).toISOString()).to.equal(first.asked_at);
    // Arguments over RUN_INLINE_BYTES are stored apart: the list shows them, as reads do.
    expect(second.arguments).to.deep.equal({ name: `Say ${big}` });
    const run = (await me.api.get(new URL(first.run_url).pathname)).body;
    expect(run.results.at(-1).approval).to.deep.equal({ id: first.id, tool: first.tool, arguments: first.arguments });

    const onlyB = await me.api.get('/api/approvals/~?task=ask-b');
    expect(onlyB.body.approvals.map((p: any) => p.id)).to.deep.equal([second.id]);
    expect((await me.api.get('/api/approvals/~?profile=default&task=ask-a')).body.approvals.map((p: any) => p.id)).to.deep.equal([first.id]);
    expect((await me.api.get('/api/approvals/~?profile=elsewhere')).body.approvals).to.deep.equal([]);

    const decided = await me.api.post(`${new URL(first.run_url).pathname}/approvals/${first.id}`, { approve: true });
    expect(decided.status, decided.text).to.equal(202);
    expect((await waitForRun(me.api, first.run_url)).status).to.equal('ready');
    expect((await me.api.get('/api/approvals/~')).body.approvals.map((p: any) => p.id)).to.deep.equal([second.id]);
    await me.api.post(`${new URL(second.run_url).pathname}/approvals/${second.id}`, { approve: false, reason: 'no' });
    await waitForRun(me.api, second.run_url);
    expect((await me.api.get('/api/approvals/~')).body).to.deep.equal({ approvals: [] });
  });

  it('shows another user nothing of them, answers 404 for another user\'s path and 400 naming a bad query', async () => {
    const other = await signedIn('approvals-other');
    expect((await other.api.get('/api/approvals/~')).body).to.deep.equal({ approvals: [] });
    const theirs = await other.api.get(`/api/approvals/${me.username}`);
    expect(theirs.status).to.equal(404);
    const bad = await me.api.get('/api/approvals/~?task=no%20spaces');
    expect(bad.status).to.equal(400);
    expect(bad.body.error.message).to.match(/^query\.task: /);
    expect((await me.api.get(`/api/approvals/${me.username}`)).status).to.equal(200);
  });
});
