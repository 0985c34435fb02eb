import { expect } from 'chai';
import { sha256 } from '../../src/store/secrets';
import { revokeSessions } from '../../src/store/sessions';
import { api, sessionFor, signedIn, startApi, uniqueUser } from '../helpers/api';
import { getStack } from '../helpers/stack';

const expect401 = (res: { status: number; body: any }) => {
  expect(res.status).to.equal(401);
  expect(res.body.error.code).to.equal('unauthorized');
  expect(res.body.error.message).to.match(/session/);
};

describe('sessions and the current user', () => {
  it('answers GET /api/users/~ with the username and emails', async () => {
    const me = await signedIn('user');
    const res = await me.api.get('/api/users/~');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ username: me.username, emails: [] });
  });

  it('treats the own username in a path like ~', async () => {
    const me = await signedIn('user');
    const res = await me.api.get(`/api/users/${me.username}`);
    expect(res.status).to.equal(200);
    expect(res.body.username).to.equal(me.username);
  });

  it("answers 404 for another user's record", async () => {
    const me = await signedIn('user');
    const other = await signedIn('other');
    const res = await me.api.get(`/api/users/${other.username}`);
    expect(res.status).to.equal(404);
    expect(res.body.error.code).to.equal('not_found');
    expect(res.text).not.to.contain('emails');
  });

  it('stores only a hash of the session id', async () => {
    const username = uniqueUser('hash');
    const id = await sessionFor(username);
    const raw = await getStack().db.conn.db!.collection('sessions').find({ username }).toArray();
    expect(raw).to.have.length(1);
    expect(raw[0]!.hash).to.equal(sha256(id));
    expect(JSON.stringify(raw)).not.to.contain(id.split('/')[2]);
  });

  it('creates the user with a default profile', async () => {
    const me = await signedIn('user');
    const res = await me.api.get('/api/profiles/~');
    expect(res.body.map((p: { slug: string }) => p.slug)).to.deep.equal([`${me.username}/default`]);
  });

  describe('refuses with 401', () => {
    it('a request without a cookie', async () => {
      expect401(await api(undefined).get('/api/users/~'));
      expect401(await api(undefined).put('/api/tasks/~/default/t', {}));
    });

    it('an unknown session id', async () => {
      expect401(await api('ptr/nobody/not-a-session').get('/api/users/~'));
    });

    it('an expired session', async () => {
      const id = await sessionFor(uniqueUser('expired'), { ttlHours: 1, now: new Date(Date.now() - 2 * 3600_000) });
      expect401(await api(id).get('/api/tasks/~'));
    });

    it('a revoked session, within the session cache bound', async () => {
      // A cache of 0 makes the bound exact: the very next request sees the revocation.
      const uncached = await startApi({ SESSION_CACHE_MS: '0' });
      try {
        const username = uniqueUser('revoked');
        const id = await sessionFor(username);
        expect((await api(id, uncached.url).get('/api/users/~')).status).to.equal(200);
        expect(await revokeSessions(getStack().db.models, username, { all: true })).to.equal(1);
        expect401(await api(id, uncached.url).get('/api/users/~'));
      } finally {
        await uncached.close();
      }
    });

    it('a revoked session once SESSION_CACHE_MS has passed, even though it was cached', async () => {
      const cacheMs = getStack().config.SESSION_CACHE_MS;
      const username = uniqueUser('revoked');
      const id = await sessionFor(username);
      expect((await api(id).get('/api/users/~')).status).to.equal(200);
      await revokeSessions(getStack().db.models, username, { all: true });
      await new Promise((r) => setTimeout(r, cacheMs + 50));
      expect401(await api(id).get('/api/users/~'));
    });
  });
});
