import { expect } from 'chai';
import { signedIn, taskBody } from '../helpers/api';
import { getStack } from '../helpers/stack';

describe('tasks, Variant A (/api/profiles/~/default/tasks/:task)', () => {
  const model = () => getStack().config.VARIANT_A_MODEL;

  it('creates with 201, updates with 200, and reads the same task through both path families', async () => {
    const me = await signedIn('ta');
    const created = await me.api.put('/api/profiles/~/default/tasks/daily', taskBody('openai', 'Day {{ d }}', model(), 'sk-a'));
    expect(created.status).to.equal(201);
    expect(created.body).to.deep.include({ name: 'daily', slug: `${me.username}/default/daily`, runner: 'openai', provider: 'openai' });
    const updated = await me.api.put(`/api/profiles/${me.username}/default/tasks/daily`, taskBody('openai', 'Night', model()));
    expect(updated.status).to.equal(200);
    const viaA = await me.api.get('/api/profiles/~/default/tasks/daily');
    const viaB = await me.api.get('/api/tasks/~/default/daily');
    expect(viaA.status).to.equal(200);
    expect(viaA.body).to.deep.equal(viaB.body);
    expect(viaA.body.prompt).to.equal('Night');
    expect(viaA.body.settings).to.deep.equal({ key_set: true });
  });

  it('lists the default profile only', async () => {
    const me = await signedIn('ta');
    expect((await me.api.post('/api/profiles/~/other', {})).status).to.equal(201);
    expect((await me.api.put('/api/profiles/~/default/tasks/in-default', taskBody('openai', 'x', model(), 'k'))).status).to.equal(201);
    expect((await me.api.put('/api/tasks/~/other/in-other', taskBody('openai', 'x', 'any', 'k'))).status).to.equal(201);
    const res = await me.api.get('/api/profiles/~/default/tasks');
    expect(res.status).to.equal(200);
    expect(res.body.map((t: { name: string }) => t.name)).to.deep.equal(['in-default']);
  });

  it('accepts only runner openai', async () => {
    const me = await signedIn('ta');
    const res = await me.api.put('/api/profiles/~/default/tasks/t', taskBody('anthropic', 'x', 'claude', 'k'));
    expect(res.status).to.equal(400);
    expect(res.body.error.message).to.match(/^runner: expected "openai"/);
  });

  it('accepts only the configured model, naming openai.model otherwise', async () => {
    const me = await signedIn('ta');
    const res = await me.api.put('/api/profiles/~/default/tasks/t', taskBody('openai', 'x', 'gpt-other', 'k'));
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('invalid_request');
    expect(res.body.error.message).to.match(/^openai\.model: .*only the model/);
    expect(res.body.error.message).to.contain(model());
  });

  it('takes the short form with the Variant A model', async () => {
    const me = await signedIn('ta');
    const res = await me.api.put('/api/profiles/~/default/tasks/short', { provider: 'openai', prompt: 'p', settings: { key: 'k' } });
    expect(res.status).to.equal(201);
    expect(res.body.openai).to.deep.equal({ prompt: 'p', model: model() });
  });

  it('has no Variant A path for other profiles', async () => {
    const me = await signedIn('ta');
    expect((await me.api.post('/api/profiles/~/other', {})).status).to.equal(201);
    const res = await me.api.put('/api/profiles/~/other/tasks/t', taskBody('openai', 'x', model(), 'k'));
    expect(res.status).to.equal(404);
    expect(res.body.error.code).to.equal('not_found');
  });

  it('deletes a task with 204, after which it is gone from both path families', async () => {
    const me = await signedIn('ta');
    await me.api.put('/api/profiles/~/default/tasks/bye', taskBody('openai', 'x', model(), 'k'));
    const res = await me.api.delete('/api/profiles/~/default/tasks/bye');
    expect(res.status).to.equal(204);
    expect((await me.api.get('/api/profiles/~/default/tasks/bye')).status).to.equal(404);
    expect((await me.api.get('/api/tasks/~/default/bye')).status).to.equal(404);
    expect((await me.api.delete('/api/profiles/~/default/tasks/bye')).status).to.equal(404);
  });
});
