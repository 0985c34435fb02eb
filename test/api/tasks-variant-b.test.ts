import { expect } from 'chai';
import { signedIn, taskBody } from '../helpers/api';
import { getStack } from '../helpers/stack';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('tasks, Variant B (/api/tasks/~/:profile/:task)', () => {
  it('creates an openai task with 201 and returns the stored representation', async () => {
    const me = await signedIn('tb');
    const res = await me.api.put('/api/tasks/~/default/summarise', taskBody('openai', 'Sum {{ text }}', 'gpt-4.1', 'sk-own-1'));
    expect(res.status).to.equal(201);
    const { created_at, modified_at, ...rest } = res.body;
    expect(rest).to.deep.equal({
      name: 'summarise',
      slug: `${me.username}/default/summarise`,
      runner: 'openai',
      openai: { prompt: 'Sum {{ text }}', model: 'gpt-4.1' },
      provider: 'openai',
      prompt: 'Sum {{ text }}',
      settings: { key_set: true },
    });
    expect(created_at).to.match(ISO_MS);
    expect(modified_at).to.equal(created_at);
  });

  it('creates an anthropic task with any model and an optional max_tokens', async () => {
    const me = await signedIn('tb');
    await me.api.post('/api/profiles/~/writing', {});
    const body = { runner: 'anthropic', anthropic: { prompt: 'Write {{ topic }}', model: 'claude-any', max_tokens: 300 }, settings: { key: 'sk-ant-1' } };
    const res = await me.api.put('/api/tasks/~/writing/essay', body);
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.include({ runner: 'anthropic', provider: 'anthropic', slug: `${me.username}/writing/essay` });
    expect(res.body.anthropic).to.deep.equal({ prompt: 'Write {{ topic }}', model: 'claude-any', max_tokens: 300 });
  });

  it('updates an existing name with 200, a new version, and the same created_at', async () => {
    const me = await signedIn('tb');
    const first = await me.api.put('/api/tasks/~/default/t', taskBody('openai', 'one', 'm1', 'sk-1'));
    const second = await me.api.put(`/api/tasks/${me.username}/default/t`, taskBody('openai', 'two', 'm2'));
    expect(second.status).to.equal(200);
    expect(second.body.prompt).to.equal('two');
    expect(second.body.openai).to.deep.equal({ prompt: 'two', model: 'm2' });
    expect(second.body.created_at).to.equal(first.body.created_at);
    expect(Date.parse(second.body.modified_at)).to.be.at.least(Date.parse(first.body.modified_at));
    const { models } = getStack().db;
    const task = await models.Task.findOne({ owner: me.username, profile: 'default', name: 't' }).lean();
    expect(task!.version).to.equal(2);
    const versions = await models.TaskVersion.find({ task_id: task!._id }).sort({ version: 1 }).lean();
    expect(versions.map((v) => [v.version, v.prompt, v.model])).to.deep.equal([
      [1, 'one', 'm1'],
      [2, 'two', 'm2'],
    ]);
  });

  it('reads one task and lists a profile, oldest first', async () => {
    const me = await signedIn('tb');
    await me.api.post('/api/profiles/~/p', {});
    await me.api.put('/api/tasks/~/p/zeta', taskBody('openai', 'z', 'm', 'k'));
    await me.api.put('/api/tasks/~/p/zzz-second', taskBody('openai', 'y', 'm', 'k'));
    await me.api.put('/api/tasks/~/default/elsewhere', taskBody('openai', 'x', 'm', 'k'));
    const one = await me.api.get('/api/tasks/~/p/zeta');
    expect(one.status).to.equal(200);
    expect(one.body.slug).to.equal(`${me.username}/p/zeta`);
    const list = await me.api.get('/api/tasks/~/p');
    expect(list.status).to.equal(200);
    expect(list.body.map((t: { name: string }) => t.name)).to.deep.equal(['zeta', 'zzz-second']);
    expect(list.body[0]).to.deep.equal(one.body);
  });

  it('lists every profile of the user at GET /api/tasks/~', async () => {
    const me = await signedIn('tb');
    await me.api.post('/api/profiles/~/q', {});
    await me.api.put('/api/tasks/~/default/a1', taskBody('openai', 'x', 'm', 'k'));
    await me.api.put('/api/tasks/~/q/b2', taskBody('anthropic', 'y', 'c', 'k'));
    const res = await me.api.get('/api/tasks/~');
    expect(res.status).to.equal(200);
    expect(res.body.map((t: { slug: string }) => t.slug)).to.deep.equal([`${me.username}/default/a1`, `${me.username}/q/b2`]);
  });

  it('answers 404 naming the profile when it does not exist', async () => {
    const me = await signedIn('tb');
    const put = await me.api.put('/api/tasks/~/nope/t', taskBody('openai', 'x', 'm', 'k'));
    expect(put.status).to.equal(404);
    expect(put.body.error.message).to.contain('profile "nope"');
    expect((await me.api.get('/api/tasks/~/nope')).status).to.equal(404);
  });

  it('answers 404 for a task that does not exist', async () => {
    const me = await signedIn('tb');
    const res = await me.api.get('/api/tasks/~/default/missing');
    expect(res.status).to.equal(404);
    expect(res.body.error).to.deep.equal({ code: 'not_found', message: 'task "default/missing" not found' });
  });

  it('accepts the short form {provider, prompt} with the default model of that provider', async () => {
    const me = await signedIn('tb');
    const { config } = getStack();
    const oa = await me.api.put('/api/tasks/~/default/short-a', { provider: 'openai', prompt: 'hello', settings: { key: 'k' } });
    expect(oa.status).to.equal(201);
    expect(oa.body.openai).to.deep.equal({ prompt: 'hello', model: config.OPENAI_DEFAULT_MODEL });
    const an = await me.api.put('/api/tasks/~/default/short-b', { provider: 'anthropic', prompt: 'hi', settings: { key: 'k' } });
    expect(an.body.anthropic).to.deep.equal({ prompt: 'hi', model: config.ANTHROPIC_DEFAULT_MODEL });
  });

  it('ignores unknown fields in the body', async () => {
    const me = await signedIn('tb');
    const res = await me.api.put('/api/tasks/~/default/extra', {
      ...taskBody('openai', 'x', 'm', 'k'),
      allow_update: true,
      colour: 'blue',
      openai: { prompt: 'x', model: 'm', temperature: 2 },
    });
    expect(res.status).to.equal(201);
    expect(res.body).not.to.have.property('colour');
    expect(res.body.openai).to.deep.equal({ prompt: 'x', model: 'm' });
  });

  it('keeps the other runner object out of the way: only the one named by runner counts', async () => {
    const me = await signedIn('tb');
    const res = await me.api.put('/api/tasks/~/default/both', {
      runner: 'anthropic',
      anthropic: { prompt: 'a', model: 'claude' },
      openai: 'not even an object',
      settings: { key: 'k' },
    });
    expect(res.status).to.equal(201);
    expect(res.body.runner).to.equal('anthropic');
  });

  it('switches runner on update', async () => {
    const me = await signedIn('tb');
    await me.api.put('/api/tasks/~/default/sw', taskBody('openai', 'x', 'gpt', 'k1'));
    const res = await me.api.put('/api/tasks/~/default/sw', taskBody('anthropic', 'y', 'claude', 'k2'));
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ runner: 'anthropic', provider: 'anthropic', prompt: 'y' });
    expect(res.body).not.to.have.property('openai');
  });

  it('serialises concurrent saves of one name: one creation, distinct versions, each one loadable', async () => {
    const me = await signedIn('tb');
    const { models } = getStack().db;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => me.api.put('/api/tasks/~/default/race', taskBody('openai', `p${i}`, 'm', `k${i}`))),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201), statuses.join()).to.have.length(1);
    expect(statuses.every((s) => s === 201 || s === 200), statuses.join()).to.equal(true);
    const task = (await models.Task.findOne({ owner: me.username, name: 'race' }).lean())!;
    const versions = await models.TaskVersion.find({ task_id: task._id }).lean();
    expect(versions.map((v) => v.version).sort((a, b) => a - b)).to.deep.equal(
      Array.from({ length: 8 }, (_, i) => i + 1),
    );
    expect(task.version).to.equal(8);
    const current = versions.find((v) => v.version === task.version)!;
    expect(current.prompt).to.equal(task.prompt);
  });
});
