import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { signedIn, type Api } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { atTeardown, getStack } from '../helpers/stack';
import { ptrAs } from '../helpers/ptr';

/** `ptr` in this process, for a user of the shared stack's API. */
const ptr = (args: string[], sessionId: string) => ptrAs(args, sessionId);

const answered = (req: RecordedRequest) => (req.body.messages as Array<{ role: string }>).some((m) => m.role === 'tool');

describe('ptr: deprecated models and pending approvals', () => {
  let me: { username: string; sessionId: string; api: Api };
  before(async () => {
    me = await signedIn('ptr-first');
  });
  afterEach(() => getStack().fake.reset());

  it('prints a save\'s deprecation warning on stderr, and lists only the tasks that will break with --deprecated', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-task-'));
    atTeardown(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const old = path.join(dir, 'old.yaml');
    fs.writeFileSync(old, 'runner: anthropic\nanthropic:\n  prompt: Hi\n  model: claude-sonnet-4-5\nsettings:\n  key: sk-test-key-0123456789abcdef\n');
    const created = await ptr(['task', 'create', 'old', '-f', old], me.sessionId);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.match(/^created task /);
    expect(created.stderr).to.match(/^warning: anthropic\.model: .*claude-sonnet-4-5.*2026-11-30/);

    const current = path.join(dir, 'current.yaml');
    fs.writeFileSync(current, 'runner: anthropic\nanthropic:\n  prompt: Hi\n  model: claude-sonnet-5-5\nsettings:\n  key: sk-test-key-0123456789abcdef\n');
    const fine = await ptr(['task', 'create', 'current', '-f', current], me.sessionId);
    expect(fine.code, fine.stderr).to.equal(0);
    expect(fine.stderr).to.equal('');

    const all = await ptr(['task', 'list'], me.sessionId);
    expect(all.stdout).to.contain('default/old').and.to.contain('default/current');
    const deprecated = await ptr(['task', 'list', '--deprecated'], me.sessionId);
    expect(deprecated.code, deprecated.stderr).to.equal(0);
    expect(deprecated.stdout).to.contain('default/old');
    expect(deprecated.stdout).not.to.contain('default/current');
  });

  it('lists the tool calls waiting across runs, each with the ptr run approve line that decides it', async () => {
    const { fake } = getStack();
    await installServlet(me.api, me.username, 'greeter', 'hello');
    const gated = await me.api.post('/api/profiles/~/default/installations', { servlet_slug: `${me.username}/greeter`, name: 'hello', settings: { approval: ['greet'] } });
    expect(gated.status, gated.text).to.equal(200);
    await createTask(me.api, 'default', 'ask');
    fake.script((req) => (answered(req) ? openaiText('done') : openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: lastUserText(req) } }])));

    expect((await ptr(['approvals'], me.sessionId)).stdout).to.equal('nothing waits for a decision\n');
    const triggered = await postSigned(await signedUrl(me.api, 'default', 'ask'), { text: 'Ann' }, { 'run-id': 'r1' });
    expect(triggered.status, triggered.text).to.equal(201);
    const listed = await until('the ask', async () => {
      const out = await ptr(['approvals'], me.sessionId);
      return out.stdout.includes('hello__greet') && out;
    });
    expect(listed.code).to.equal(0);
    expect(listed.stdout).to.contain('default/ask/r1').and.to.contain('{"name":"Say Ann"}');
    const line = /ptr run approve ask r1 (\S+)$/m.exec(listed.stdout);
    expect(line, listed.stdout).to.not.equal(null);

    // The printed line, pasted (without its `ptr`), decides the call.
    const pasted = await ptr(line![0].split(' ').slice(1), me.sessionId);
    expect(pasted.code, pasted.stderr).to.equal(0);
    expect((await waitForRun(me.api, triggered.body.url)).status).to.equal('ready');
    const json = await ptr(['--json', 'approvals', '--task', 'ask'], me.sessionId);
    expect(JSON.parse(json.stdout)).to.deep.equal({ approvals: [] });
  });
});
