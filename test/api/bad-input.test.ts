import { expect } from 'chai';
import { signedIn, taskBody, type Api, type ApiResponse } from '../helpers/api';
import { getStack } from '../helpers/stack';

function expectError(res: ApiResponse, status: number, code: string, field?: string | RegExp) {
  expect(res.status, res.text).to.equal(status);
  expect(res.body.error).to.have.keys(['code', 'message']);
  expect(res.body.error.code).to.equal(code);
  if (typeof field === 'string') expect(res.body.error.message.startsWith(`${field}: `), res.body.error.message).to.equal(true);
  else if (field) expect(res.body.error.message).to.match(field);
}

describe('bad input', () => {
  let me: { username: string; api: Api };
  before(async () => {
    me = await signedIn('bad');
  });
  const put = (body: unknown, path = '/api/tasks/~/default/t') => me.api.put(path, body);

  describe('bodies', () => {
    it('answers invalid JSON with 400 invalid_json', async () => {
      expectError(await me.api.put('/api/tasks/~/default/t', undefined, { raw: '{"runner": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json', 'body');
    });

    it('answers a JSON body that is not an object with 400', async () => {
      for (const raw of ['[1,2]', '"text"', '42', 'true']) {
        expectError(await me.api.put('/api/tasks/~/default/t', undefined, { raw, headers: { 'content-type': 'application/json' } }), 400, 'invalid_request', 'body');
      }
    });

    it('answers a wrong content type with 415', async () => {
      const res = await me.api.put('/api/tasks/~/default/t', undefined, { raw: 'runner=openai', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expectError(res, 415, 'unsupported_media_type', 'content-type');
      expectError(await me.api.post('/api/profiles/~/p', undefined, { raw: 'hello', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    });

    it('answers a body over BODY_LIMIT_BYTES with 413', async () => {
      const prompt = 'x'.repeat(getStack().config.BODY_LIMIT_BYTES + 10);
      expectError(await put(taskBody('openai', prompt, 'm', 'k')), 413, 'payload_too_large', 'body');
    });

    it('names a missing field', async () => {
      expectError(await put({ openai: { prompt: 'x', model: 'm' } }), 400, 'invalid_request', 'runner');
      expectError(await put({ runner: 'openai', openai: { model: 'm' }, settings: { key: 'k' } }), 400, 'invalid_request', 'openai.prompt');
      expectError(await put({ runner: 'openai', openai: { prompt: 'x' }, settings: { key: 'k' } }), 400, 'invalid_request', 'openai.model');
      expectError(await put({ provider: 'openai', settings: { key: 'k' } }), 400, 'invalid_request', 'prompt');
    });

    it('names a mistyped field', async () => {
      expectError(await put({ runner: 'openai', openai: { prompt: 'x', model: 5 } }), 400, 'invalid_request', 'openai.model');
      expectError(await put({ runner: 7, openai: {} }), 400, 'invalid_request', 'runner');
      expectError(await put({ runner: 'openai', openai: 'x' }), 400, 'invalid_request', 'openai');
      for (const max of [0, -1, 1.5, '10']) {
        expectError(await put({ runner: 'openai', openai: { prompt: 'x', model: 'm', max_tokens: max }, settings: { key: 'k' } }), 400, 'invalid_request', 'openai.max_tokens');
      }
      expectError(await put({ ...taskBody('openai', 'x', 'm'), settings: { key: 5 } }), 400, 'invalid_request', 'settings.key');
      expectError(await put({ ...taskBody('openai', 'x', 'm'), settings: { key: '' } }), 400, 'invalid_request', 'settings.key');
      expectError(await put({ ...taskBody('openai', 'x', 'm'), settings: 'key' }), 400, 'invalid_request', 'settings');
      expectError(await put(taskBody('openai', '', 'm', 'k')), 400, 'invalid_request', 'openai.prompt');
      expectError(await me.api.post('/api/profiles/~/p1', { is_public: 'yes' }), 400, 'invalid_request', 'is_public');
      expectError(await me.api.post('/api/profiles/~/p1', { description: 'd'.repeat(1001) }), 400, 'invalid_request', 'description');
    });

    it('names an unknown runner', async () => {
      expectError(await put({ runner: 'llama', llama: { prompt: 'x', model: 'm' } }), 400, 'invalid_request', /^runner: expected "openai" or "anthropic"/);
      expectError(await put({ provider: 'llama', prompt: 'x' }), 400, 'invalid_request', 'provider');
    });

    it('names the missing runner object when it does not match runner', async () => {
      const res = await put({ runner: 'openai', anthropic: { prompt: 'x', model: 'c' }, settings: { key: 'k' } });
      expectError(res, 400, 'invalid_request', 'openai');
    });

    it('answers a template Mustache cannot parse with 400 invalid_template that says where', async () => {
      const res = await put(taskBody('openai', 'Hello\n{{#items}} {{ name }}', 'm', 'k'));
      expectError(res, 400, 'invalid_template', 'openai.prompt');
      expect(res.body.error.message).to.contain('Unclosed section "items"').and.contain('line 2');
      const tag = await put({ provider: 'openai', prompt: 'Hi {{ name', settings: { key: 'k' } });
      expectError(tag, 400, 'invalid_template', 'prompt');
      expect(tag.body.error.message).to.contain('Unclosed tag at 10 (line 1, column 11)');
    });
  });

  describe('names', () => {
    const bad = ['has space', 'x'.repeat(65), '.hidden', '-dash', 'caf\u00e9', 'a/b', 'semi;colon'];

    it('refuses a task name outside the safe character set and length, naming task', async () => {
      for (const name of bad) {
        expectError(await put(taskBody('openai', 'x', 'm', 'k'), `/api/tasks/~/default/${encodeURIComponent(name)}`), 400, 'invalid_request', 'task');
      }
      expect((await put(taskBody('openai', 'x', 'm', 'k'), `/api/tasks/~/default/${'x'.repeat(64)}`)).status).to.equal(201);
    });

    it('refuses a profile name outside the safe character set and length, naming profile', async () => {
      for (const name of bad) {
        expectError(await me.api.post(`/api/profiles/~/${encodeURIComponent(name)}`, {}), 400, 'invalid_request', 'profile');
        expectError(await put(taskBody('openai', 'x', 'm', 'k'), `/api/tasks/~/${encodeURIComponent(name)}/t`), 400, 'invalid_request', 'profile');
      }
    });

    it('answers a malformed percent-encoding in a path without a 500', async () => {
      const res = await me.api.get('/api/tasks/~/default/%E0%A4%A');
      expect(res.status).to.be.within(400, 499);
      expect(res.body.error.code).to.be.a('string');
    });
  });

  describe('lists', () => {
    it('names query.limit and query.cursor when they are bad', async () => {
      expectError(await me.api.get('/api/tasks/~?limit=0'), 400, 'invalid_request', 'query.limit');
      expectError(await me.api.get('/api/tasks/~?limit=1001'), 400, 'invalid_request', 'query.limit');
      expectError(await me.api.get('/api/tasks/~?limit=ten'), 400, 'invalid_request', 'query.limit');
      expectError(await me.api.get('/api/tasks/~?cursor=bm90LWEtY3Vyc29y'), 400, 'invalid_request', 'cursor');
      expectError(await me.api.get('/api/profiles?cursor=%5B%5D'), 400, 'invalid_request', 'cursor');
    });
  });

  it('never answers 500, whatever the body', async () => {
    const bodies: unknown[] = [
      {}, { runner: null }, { runner: 'openai', openai: null }, { runner: 'openai', openai: [] }, { runner: ['openai'] },
      { runner: 'openai', openai: { prompt: { $gt: '' }, model: 'm' } }, { provider: 'openai', prompt: ['x'] },
      { runner: 'openai', openai: { prompt: 'x', model: 'm', max_tokens: 1e308 } }, { runner: '__proto__', __proto__: {} },
      { runner: 'constructor' }, { runner: 'toString', toString: { prompt: 'x', model: 'm' } }, { settings: { key: { $ne: null } } },
      { provider: 'openai', prompt: 'x', model: 'm'.repeat(201), settings: { key: 'k' } },
    ];
    for (const body of bodies) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).to.be.within(400, 499);
      expect(res.body.error.code).to.be.a('string');
    }
  });
});
