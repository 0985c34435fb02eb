import crypto from 'node:crypto';
import { expect } from 'chai';
import { sha256 } from '../../src/store/secrets';
import { createSignInLink, SIGN_IN_LINK_TTL_MS } from '../../src/store/sign-in-links';
import { api, sessionFor, signedIn, startApi, uniqueUser, type ApiResponse } from '../helpers/api';
import { getStack } from '../helpers/stack';

/** What follows `#token=` in a sign-in link. */
const tokenOf = (url: string) => /#token=([^&]+)$/.exec(url)![1]!;
const signIn = (body: unknown, baseUrl?: string) => api(undefined, baseUrl).post('/api/sign-in', body);
const newLink = async (who: { api: ReturnType<typeof api> }) => {
  const res = await who.api.post('/api/sign-in-links', {});
  expect(res.status, res.text).to.equal(201);
  return res.body as { url: string; expires_at: string };
};
/** The session id the answer's cookie holds, the cookie as the contract gives it. */
const sessionCookie = (res: ApiResponse, secure = false) => {
  const cookie = res.headers.get('set-cookie') ?? '';
  const match = new RegExp(`^sessionId=([^;]+); Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}$`).exec(cookie);
  expect(match, cookie).to.not.equal(null);
  return match![1]!;
};
const expectInvalid = (res: ApiResponse) => {
  expect(res.status, res.text).to.equal(401);
  expect(res.body.error.code).to.equal('sign_in_link_invalid');
};
const links = () => getStack().db.conn.db!.collection('sign_in_links');

describe('signing in with a one-time link', () => {
  it("makes a link for the caller's own user: PUBLIC_URL/console with the token in the fragment, for 10 minutes", async () => {
    const me = await signedIn('link');
    const before = Date.now();
    const res = await me.api.post('/api/sign-in-links', {});
    expect(res.status, res.text).to.equal(201);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect(Object.keys(res.body).sort()).to.deep.equal(['expires_at', 'url']);
    expect(res.body.url.startsWith(`${getStack().config.PUBLIC_URL}/console#token=`), res.body.url).to.equal(true);
    expect(tokenOf(res.body.url)).to.match(/^[A-Za-z0-9_-]{43,}$/);
    const ttl = Date.parse(res.body.expires_at) - before;
    expect(ttl).to.be.within(SIGN_IN_LINK_TTL_MS - 5_000, SIGN_IN_LINK_TTL_MS + 5_000);
    expect(SIGN_IN_LINK_TTL_MS).to.equal(10 * 60_000);
  });

  it('exchanges the token for a new session in an HttpOnly, SameSite=Lax cookie, and only once', async () => {
    const me = await signedIn('link');
    const { url } = await newLink(me);
    const res = await signIn({ token: tokenOf(url) });
    expect(res.status, res.text).to.equal(204);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const id = sessionCookie(res);
    expect(id).to.match(new RegExp(`^ptr/${me.username}/`));
    expect(id).not.to.equal(me.sessionId);
    const mine = await api(id).get('/api/users/~');
    expect(mine.status).to.equal(200);
    expect(mine.body.username).to.equal(me.username);
    expectInvalid(await signIn({ token: tokenOf(url) }));
  });

  it('signs in once when two requests bring the same token at the same moment', async () => {
    const me = await signedIn('race');
    for (let round = 0; round < 5; round++) {
      const token = tokenOf((await newLink(me)).url);
      const answers = await Promise.all([signIn({ token }), signIn({ token }), signIn({ token })]);
      expect(answers.map((a) => a.status).sort(), answers.map((a) => a.text).join(' | ')).to.deep.equal([204, 401, 401]);
      for (const a of answers.filter((x) => x.status === 401)) expect(a.body.error.code).to.equal('sign_in_link_invalid');
    }
  });

  it('answers 401 sign_in_link_invalid for an unknown token and for an expired one, which it deletes', async () => {
    expectInvalid(await signIn({ token: crypto.randomBytes(32).toString('base64url') }));
    const username = uniqueUser('expired');
    await sessionFor(username);
    const made = new Date(Date.now() - SIGN_IN_LINK_TTL_MS - 1_000);
    const { token } = await createSignInLink(getStack().db.models, username, made);
    expect(await links().countDocuments({ _id: sha256(token) as never })).to.equal(1);
    expectInvalid(await signIn({ token }));
    expect(await links().countDocuments({ _id: sha256(token) as never })).to.equal(0);
  });

  it('stores only a hash of the token, and deletes links past their expiry when it makes one', async () => {
    const me = await signedIn('hash');
    const stale = await createSignInLink(getStack().db.models, me.username, new Date(Date.now() - SIGN_IN_LINK_TTL_MS - 1_000));
    const token = tokenOf((await newLink(me)).url);
    const stored = await links().find({ username: me.username }).toArray();
    expect(stored.map((l) => l._id)).to.deep.equal([sha256(token)]);
    expect(JSON.stringify(stored)).not.to.contain(token);
    expect(stale.token).not.to.equal(token);
  });

  it('never writes the token to the log, used or refused', async () => {
    const me = await signedIn('log');
    const token = tokenOf((await newLink(me)).url);
    expect((await signIn({ token })).status).to.equal(204);
    expectInvalid(await signIn({ token }));
    expect(getStack().logs.text()).not.to.contain(token);
  });

  it('refuses a bad body with 400 naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^token: required$/],
      [{ token: 5 }, /^token: expected string, received number$/],
      [{ token: '' }, /^token: must not be empty$/],
      [{ token: 'x'.repeat(257) }, /^token: must be at most 256 characters$/],
      [{ token: 'abc', user: 'root' }, /^body: unknown field "user"$/],
    ];
    for (const [body, message] of cases) {
      const res = await signIn(body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_request');
      expect(res.body.error.message).to.match(message);
    }
    const fields = await (await signedIn('fields')).api.post('/api/sign-in-links', { user: 'root' });
    expect(fields.status).to.equal(400);
    expect(fields.body.error.message).to.equal('body: unknown field "user"');
  });

  it('makes links for a session only: not without one, nor for an access token', async () => {
    const anonymous = await api(undefined).post('/api/sign-in-links', {});
    expect(anonymous.status).to.equal(401);
    const me = await signedIn('token');
    const made = await me.api.post('/api/tokens/~', { name: 'script' });
    expect(made.status, made.text).to.equal(201);
    const withToken = await api(undefined).post('/api/sign-in-links', {}, { headers: { authorization: `Bearer ${made.body.token}` } });
    expect(withToken.status).to.equal(403);
    expect(withToken.body.error.code).to.equal('session_required');
    const bearer = await api(undefined).post('/api/sign-in-links', {}, { headers: { authorization: `Bearer ${me.sessionId}` } });
    expect(bearer.status, bearer.text).to.equal(201);
  });

  it('marks the cookie Secure, and builds links on PUBLIC_URL, when PUBLIC_URL is https', async () => {
    const behindTls = await startApi({ PUBLIC_URL: 'https://ptr.example.com' });
    const me = await signedIn('tls');
    const link = await api(me.sessionId, behindTls.url).post('/api/sign-in-links', {});
    expect(link.status, link.text).to.equal(201);
    expect(link.body.url.startsWith('https://ptr.example.com/console#token='), link.body.url).to.equal(true);
    const res = await signIn({ token: tokenOf(link.body.url) }, behindTls.url);
    expect(res.status, res.text).to.equal(204);
    const id = sessionCookie(res, true);
    expect((await api(id).get('/api/users/~')).body.username).to.equal(me.username);
  });
});

describe('signing out', () => {
  it('revokes the session presented, and only it, and clears the cookie', async () => {
    // No session cache: the very next request sees the revocation.
    const uncached = await startApi({ SESSION_CACHE_MS: '0' });
    const me = await signedIn('out');
    const other = await sessionFor(me.username);
    const res = await api(me.sessionId, uncached.url).post('/api/sign-out');
    expect(res.status, res.text).to.equal(204);
    expect(res.headers.get('set-cookie')).to.match(/^sessionId=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT$/);
    const after = await api(me.sessionId, uncached.url).get('/api/users/~');
    expect(after.status).to.equal(401);
    expect((await api(other, uncached.url).get('/api/users/~')).status).to.equal(200);
  });

  it('signs out a Bearer session as well', async () => {
    const uncached = await startApi({ SESSION_CACHE_MS: '0' });
    const me = await signedIn('out');
    const bearer = { headers: { authorization: `Bearer ${me.sessionId}` } };
    expect((await api(undefined, uncached.url).post('/api/sign-out', undefined, bearer)).status).to.equal(204);
    expect((await api(undefined, uncached.url).get('/api/users/~', bearer)).status).to.equal(401);
  });

  it('needs a session', async () => {
    const res = await api(undefined).post('/api/sign-out');
    expect(res.status).to.equal(401);
    expect(res.body.error.code).to.equal('unauthorized');
  });
});

describe('the console settings', () => {
  it('answer the user, the Temporal namespace, and no Web UI when TEMPORAL_UI_URL is unset', async () => {
    const me = await signedIn('settings');
    const res = await me.api.get('/api/console/settings');
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ username: me.username, temporal_ui_url: null, temporal_namespace: getStack().config.TEMPORAL_NAMESPACE });
  });

  it('answer TEMPORAL_UI_URL without a trailing slash when it is set', async () => {
    const withUi = await startApi({ TEMPORAL_UI_URL: 'http://127.0.0.1:8233/', TEMPORAL_NAMESPACE: 'ptr-tests' });
    const me = await signedIn('settings');
    const res = await api(me.sessionId, withUi.url).get('/api/console/settings');
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.deep.equal({ username: me.username, temporal_ui_url: 'http://127.0.0.1:8233', temporal_namespace: 'ptr-tests' });
  });

  it('need a session', async () => {
    expect((await api(undefined).get('/api/console/settings')).status).to.equal(401);
  });
});
