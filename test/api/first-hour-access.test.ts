import crypto from 'node:crypto';
import { expect } from 'chai';
import { api, readResponse, signedIn, sessionFor, uniqueUser } from '../helpers/api';
import { createTask, postSigned, signedUrl } from '../helpers/runs';
import { getStack } from '../helpers/stack';

describe('Authorization: Bearer <session id>', () => {
  const get = (path: string, headers: Record<string, string>) => api(undefined).get(path, { headers });

  it('is accepted on /api/... as the cookie is', async () => {
    const username = uniqueUser('bearer');
    const id = await sessionFor(username);
    const res = await get('/api/users/~', { authorization: `Bearer ${id}` });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.username).to.equal(username);
    const put = await api(undefined).put('/api/tasks/~/default/b', { provider: 'openai', prompt: 'Hi', settings: { key: 'sk-test-key-0123456789abcdef' } }, { headers: { authorization: `bearer  ${id}` } });
    expect(put.status, put.text).to.equal(201);
  });

  it('is refused with 401 for an unknown session, even beside a valid cookie', async () => {
    const valid = await sessionFor(uniqueUser('bearer'));
    const res = await get('/api/users/~', { authorization: 'Bearer ptr/nobody/0123456789abcdef', cookie: `sessionId=${valid}` });
    expect(res.status).to.equal(401);
    expect(res.body.error.code).to.equal('unauthorized');
  });

  it('leaves the cookie to decide when the header has another scheme (a proxy\'s Basic)', async () => {
    const { sessionId } = await signedIn('bearer');
    const res = await get('/api/users/~', { authorization: 'Basic dXNlcjpwYXNz', cookie: `sessionId=${sessionId}` });
    expect(res.status, res.text).to.equal(200);
    const none = await get('/api/users/~', { authorization: 'Basic dXNlcjpwYXNz' });
    expect(none.status).to.equal(401);
    expect(none.body.error.message).to.contain('Bearer').and.to.contain('sessionId');
  });
});

describe('GET /', () => {
  it('points to the docs page, the console and the OpenAPI document, without a session', async () => {
    const res = await readResponse(await fetch(`${getStack().apiUrl}/`));
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body).to.include({ docs: '/docs', console: '/console', openapi: '/api/openapi.json' });
    expect((await fetch(`${getStack().apiUrl}${res.body.docs}`)).status).to.equal(200);
  });
});

describe('signed URLs: iat and exp', () => {
  it('holds both in milliseconds since the epoch', async () => {
    const { api: me } = await signedIn('units');
    await createTask(me, 'default', 'units');
    const before = Date.now();
    const url = new URL(await signedUrl(me, 'default', 'units'));
    const iat = Number(url.searchParams.get('iat'));
    const exp = Number(url.searchParams.get('exp'));
    expect(iat).to.be.within(before - 1000, Date.now() + 1000);
    expect(exp - iat).to.equal(getStack().config.SIGNED_URL_TTL_DAYS * 86_400_000);
  });

  it('keeps accepting a URL issued with exp in seconds, and refuses one of those past its expiry', async () => {
    const { api: me, username } = await signedIn('units');
    const { db, config } = getStack();
    await createTask(me, 'default', 'legacy');
    const task = (await db.models.Task.findOne({ owner: username, name: 'legacy' }).lean())!;
    // As store/signed-urls.ts issued them before: iat in ms, exp in s, the same HMAC over the query's values.
    const legacy = (iat: number, exp: number) => {
      const id = crypto.randomBytes(12).toString('base64url');
      const sig = crypto.createHmac('sha256', config.SIGNING_SECRET).update([username, 'default', 'legacy', task._id.toString(), id, iat, exp].join('\n')).digest('base64url');
      return `${config.PUBLIC_URL}/signed/tasks/${username}/default/legacy?id=${id}&iat=${iat}&exp=${exp}&sig=${sig}`;
    };
    const now = Date.now();
    const live = await postSigned(legacy(now, Math.floor(now / 1000) + 86_400), { text: 'x' });
    expect(live.status, live.text).to.equal(201);
    const expired = await postSigned(legacy(now - 2 * 86_400_000, Math.floor(now / 1000) - 86_400), { text: 'x' });
    expect(expired.status).to.equal(403);
    expect(expired.body.error.code).to.equal('signed_url_expired');
  });
});
