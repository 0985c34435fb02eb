import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';

describe('runs: trigger and poll', () => {
  beforeEach(() => getStack().fake.reset());

  it('runs a Variant A task to ready with the answer in the last entry', async () => {
    const { api, username } = await signedIn();
    const { config } = getStack();
    const put = await api.put('/api/profiles/~/default/tasks/greet', {
      runner: 'openai',
      openai: { prompt: 'Hello {{ name }} & <friends>', model: config.VARIANT_A_MODEL },
      settings: { key: 'sk-a-0123456789abcdef' },
    });
    expect(put.status, put.text).to.equal(201);
    const trig = await api.put('/api/profiles/~/default/tasks/greet/runs/r1', { parameters: { name: 'Ann' } });
    expect(trig.status, trig.text).to.equal(201);
    expect(trig.body.url).to.equal(`${config.PUBLIC_URL}/api/profiles/${username}/default/tasks/greet/runs/r1`);
    const run = await waitForRun(api, trig.body.url);
    expect(run.status).to.equal('ready');
    expect(run.name).to.equal('r1');
    const last = run.results[run.results.length - 1];
    expect(last.lastMessage).to.deep.equal({ role: 'assistant', content: 'echo: Hello Ann & <friends>' });
    expect(run.created_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('runs a Variant B task through a signed URL, with nested payload paths', async () => {
    const { api, username } = await signedIn();
    await createTask(api, 'default', 'nested', { prompt: '{{ text }} / {{ struct.field }} / {{ @payload }}' });
    const url = await signedUrl(api, 'default', 'nested');
    const res = await postSigned(url, { text: 'hi', struct: { field: 'deep' } }, { 'run-id': 'b1' });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.url).to.equal(`${getStack().config.PUBLIC_URL}/api/runs/${username}/default/nested/b1`);
    const run = await waitForRun(api, res.body.url);
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: hi / deep / {"text":"hi","struct":{"field":"deep"}}');
  });
});
