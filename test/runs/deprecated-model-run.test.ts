import { expect } from 'chai';
import { signedIn } from '../helpers/api';
import { openaiText } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

describe('runs: a task on a deprecated model', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('says so once in its run\'s log, with the end of life, and runs as usual; a current model\'s run says nothing', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'old', { model: 'gpt-5-mini' });
    await createTask(api, 'default', 'new', { model: 'gpt-5.4-mini' });
    getStack().fake.script([openaiText('one'), openaiText('two')]);
    const old = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'old'), { text: 'x' }, { 'run-id': 'r1' })).body.url);
    expect(old.status, JSON.stringify(old.results)).to.equal('ready');
    const notes = old.results.filter((e: { msg: string }) => /deprecated/.test(e.msg));
    expect(notes).to.have.length(1);
    expect(notes[0]).to.include({ level: 40 });
    expect(notes[0].msg).to.contain('gpt-5-mini').and.to.contain('2026-12-11');
    const current = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'new'), { text: 'x' }, { 'run-id': 'r1' })).body.url);
    expect(current.status).to.equal('ready');
    expect(current.results.filter((e: { msg: string }) => /deprecated/.test(e.msg))).to.deep.equal([]);
  });
});
