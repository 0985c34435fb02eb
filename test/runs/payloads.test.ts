import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';

describe('runs: trigger data and templates', () => {
  beforeEach(() => getStack().fake.reset());

  const variantATask = async (api: Awaited<ReturnType<typeof signedIn>>['api'], prompt: string) => {
    const res = await api.put('/api/profiles/~/default/tasks/a', {
      runner: 'openai',
      openai: { prompt, model: getStack().config.VARIANT_A_MODEL },
      settings: { key: 'sk-test-0123456789abcdef' },
    });
    expect(res.status, res.text).to.equal(201);
  };

  it('refuses Variant A parameters that are not a flat map of strings, naming the field', async () => {
    const { api } = await signedIn();
    await variantATask(api, 'Hi {{ name }}');
    for (const [parameters, field] of [
      [{ name: { nested: 'x' } }, 'parameters.name'],
      [{ name: ['a'] }, 'parameters.name'],
      [{ name: 3 }, 'parameters.name'],
      ['text', 'parameters'],
    ] as const) {
      const res = await api.put('/api/profiles/~/default/tasks/a/runs/bad', { parameters });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error.message).to.contain(field);
    }
    expect(await getStack().db.models.Run.countDocuments({ task: 'a', name: 'bad' })).to.equal(0);
  });

  it('answers 404 for an unknown task, on both variants', async () => {
    const { api } = await signedIn();
    expect((await api.put('/api/profiles/~/default/tasks/nope/runs/r', { parameters: {} })).status).to.equal(404);
    expect((await api.get('/api/profiles/~/default/tasks/nope/runs/r')).status).to.equal(404);
    expect((await api.get('/api/runs/~/default/nope')).status).to.equal(404);
    expect((await api.post('/api/tasks/~/default/nope/signed')).status).to.equal(404);
  });

  it('refuses a trigger body over the size limit with 413 and a bad run-id with 400', async () => {
    const { api } = await signedIn();
    const { config } = getStack();
    await createTask(api, 'default', 'big');
    const url = await signedUrl(api, 'default', 'big');
    const huge = await postSigned(url, { text: 'x'.repeat(config.BODY_LIMIT_BYTES + 10) });
    expect(huge.status).to.equal(413);
    expect(huge.body.error.code).to.equal('payload_too_large');
    const badName = await postSigned(url, {}, { 'run-id': '../etc' });
    expect(badName.status).to.equal(400);
    expect(badName.body.error.message).to.contain('header.run-id');
    const notObject = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2]' });
    expect(notObject.status).to.equal(400);
  });

  it('takes an empty body with a JSON content type as an empty object', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'empty');
    const signed = await api.post('/api/tasks/~/default/empty/signed', undefined, { headers: { 'content-type': 'application/json' }, raw: '' });
    expect(signed.status, signed.text).to.equal(200);
    const res = await fetch(signed.body.url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(res.status).to.equal(201);
    const run = await waitForRun(api, ((await res.json()) as { url: string }).url);
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say ');
  });

  it('expands a placeholder with no value to empty and logs a warning naming it', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'gap', { prompt: 'A{{ missing }}B{{ deep.er }}C "{{ q }}"' });
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'gap'), { q: '<&>' })).body.url);
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: ABC "<&>"');
    const warnings = run.results.filter((e: any) => e.level === 40).map((e: any) => e.msg);
    expect(warnings).to.deep.equal([
      'placeholder {{ missing }} has no value in the trigger data; it expands to empty',
      'placeholder {{ deep.er }} has no value in the trigger data; it expands to empty',
    ]);
  });
});
