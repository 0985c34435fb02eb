import { expect } from 'chai';
import { signedIn, taskBody, type Api, type ApiResponse } from '../helpers/api';

const KEY = 'sk-test-key-0123456789abcdef';

function expectInvalid(res: ApiResponse, message: string | RegExp) {
  expect(res.status, res.text).to.equal(400);
  expect(res.body.error.code).to.equal('invalid_request');
  if (typeof message === 'string') expect(res.body.error.message).to.equal(message);
  else expect(res.body.error.message).to.match(message);
}

describe('saving a task on a deprecated model', () => {
  let me: Api;
  before(async () => {
    me = (await signedIn('deprecated')).api;
  });

  it('answers 201 with a model_deprecated warning naming the field and the end of life', async () => {
    const res = await me.put('/api/tasks/~/default/old-sonnet', taskBody('anthropic', 'Hi {{ name }}', 'claude-sonnet-4-5', KEY));
    expect(res.status, res.text).to.equal(201);
    expect(res.body.anthropic.model).to.equal('claude-sonnet-4-5');
    expect(res.body.warnings).to.have.length(1);
    expect(res.body.warnings[0]).to.include({ code: 'model_deprecated', field: 'anthropic.model', end_of_life: '2026-11-30' });
    expect(res.body.warnings[0].message).to.contain('claude-sonnet-4-5');
  });

  it('warns on an update and on the short form too', async () => {
    const updated = await me.put('/api/tasks/~/default/old-sonnet', taskBody('anthropic', 'Hello', 'claude-sonnet-4-5-20250929'));
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.body.warnings[0]).to.include({ field: 'anthropic.model', end_of_life: '2026-11-30' });
    const short = await me.put('/api/tasks/~/default/old-gpt', { provider: 'openai', prompt: 'Hi', model: 'gpt-5-mini', settings: { key: KEY } });
    expect(short.status, short.text).to.equal(201);
    expect(short.body.warnings[0]).to.include({ code: 'model_deprecated', field: 'openai.model', end_of_life: '2026-12-11' });
  });

  it('answers no warnings key at all for a current model, and reads show none', async () => {
    const res = await me.put('/api/tasks/~/default/current', taskBody('anthropic', 'Hi', 'claude-sonnet-5-5', KEY));
    expect(res.status, res.text).to.equal(201);
    expect(res.body).not.to.have.property('warnings');
    expect((await me.get('/api/tasks/~/default/old-sonnet')).body).not.to.have.property('warnings');
  });

  it('lists only the tasks on a deprecated model with ?deprecated=true, on both path families', async () => {
    await me.post('/api/profiles/~/work', {});
    await me.put('/api/tasks/~/work/old-elsewhere', taskBody('openai', 'Hi', 'gpt-5-nano', KEY));
    await me.put('/api/tasks/~/work/fine', taskBody('openai', 'Hi', 'gpt-5.4-mini', KEY));
    const names = (res: ApiResponse) => {
      expect(res.status, res.text).to.equal(200);
      return (res.body as Array<{ slug: string }>).map((t) => t.slug.split('/').slice(1).join('/')).sort();
    };
    expect(names(await me.get('/api/tasks/~?deprecated=true'))).to.deep.equal(['default/old-gpt', 'default/old-sonnet', 'work/old-elsewhere']);
    expect(names(await me.get('/api/tasks/~/work?deprecated=true'))).to.deep.equal(['work/old-elsewhere']);
    expect(names(await me.get('/api/profiles/~/default/tasks?deprecated=true'))).to.deep.equal(['default/old-gpt', 'default/old-sonnet']);
    expect(names(await me.get('/api/tasks/~?deprecated=false'))).to.have.length(5);
    expect(names(await me.get('/api/tasks/~?deprecated=true&limit=1'))).to.deep.equal(['default/old-sonnet']);
    expectInvalid(await me.get('/api/tasks/~?deprecated=yes'), 'query.deprecated: expected "true" or "false"');
  });
});

describe('a placeholder provider key', () => {
  let me: Api;
  before(async () => {
    me = (await signedIn('placeholder')).api;
  });

  it('is refused with 400 invalid_request naming settings.key, and nothing is saved', async () => {
    for (const key of ['sk-...', 'sk-…', '<your key>', 'your-api-key', 'YOUR_OPENAI_API_KEY', 'sk-ant-...abc']) {
      const res = await me.put('/api/tasks/~/default/t', taskBody('openai', 'Hi', 'gpt-5.4-mini', key));
      expectInvalid(res, /^settings\.key: a placeholder/);
      expect(res.body.error.message, 'the key is not echoed').not.to.contain(key);
      const short = await me.put('/api/tasks/~/default/t', { provider: 'anthropic', prompt: 'Hi', settings: { key } });
      expectInvalid(short, /^settings\.key: a placeholder/);
    }
    expect((await me.get('/api/tasks/~/default/t')).status).to.equal(404);
  });

  it('does not refuse keys that only look unusual', async () => {
    for (const [i, key] of ['sk-proj-abc.def', 'sk-yourself-0123', '<abc', 'k'].entries()) {
      const res = await me.put(`/api/tasks/~/default/fine-${i}`, taskBody('openai', 'Hi', 'gpt-5.4-mini', key));
      expect(res.status, `${key}: ${res.text}`).to.equal(201);
    }
  });
});

describe('validation messages', () => {
  let me: Api;
  before(async () => {
    me = (await signedIn('messages')).api;
  });
  const put = (body: unknown) => me.put('/api/tasks/~/default/t', body);

  it('says a limit must be greater than 0 rather than zod\'s "Too small"', async () => {
    expectInvalid(await put({ ...taskBody('openai', 'Hi', 'm', KEY), limits: { timeout_s: 0 } }), 'limits.timeout_s: must be greater than 0');
    expectInvalid(await put({ ...taskBody('openai', 'Hi', 'm', KEY), limits: { max_turns: 1.5 } }), 'limits.max_turns: must be a whole number');
  });

  it('says where max_tokens belongs when it is put in limits, for the body\'s runner', async () => {
    expectInvalid(await put({ ...taskBody('openai', 'Hi', 'm', KEY), limits: { max_tokens: 100 } }), 'limits: unknown field "max_tokens"; max_tokens belongs in openai.max_tokens');
    expectInvalid(await put({ ...taskBody('anthropic', 'Hi', 'm', KEY), limits: { max_tokens: 100 } }), 'limits: unknown field "max_tokens"; max_tokens belongs in anthropic.max_tokens');
    expectInvalid(await put({ provider: 'anthropic', prompt: 'Hi', limits: { max_tokens: 100 } }), /belongs in anthropic\.max_tokens/);
    expectInvalid(await put({ ...taskBody('openai', 'Hi', 'm', KEY), limits: { turns: 3 } }), 'limits: unknown field "turns"; limits takes max_turns, timeout_s and max_total_tokens');
  });

  it('says "required" for a missing field', async () => {
    expectInvalid(await put({ runner: 'openai', openai: { prompt: 'Hi' }, settings: { key: KEY } }), 'openai.model: required');
    expectInvalid(await put({ runner: 'openai', openai: { prompt: 'Hi', model: 5 }, settings: { key: KEY } }), 'openai.model: expected string, received number');
    expectInvalid(await put({ runner: 'openai', openai: { prompt: '', model: 'm' }, settings: { key: KEY } }), 'openai.prompt: must not be empty');
  });
});
