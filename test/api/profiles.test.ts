import { expect } from 'chai';
import { signedIn, taskBody } from '../helpers/api';
import { getStack } from '../helpers/stack';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('profiles', () => {
  it('creates a profile with 201 and returns it in the compatibility shape', async () => {
    const me = await signedIn('prof');
    const res = await me.api.post('/api/profiles/~/work', { description: 'for work', is_public: false, allow_update: true });
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ slug: `${me.username}/work`, description: 'for work', is_public: false });
    expect(res.body.created_at).to.match(ISO_MS);
    expect(res.body.modified_at).to.match(ISO_MS);
    expect(Object.keys(res.body).sort()).to.deep.equal(['created_at', 'description', 'is_public', 'modified_at', 'slug']);
  });

  it('defaults description to empty and is_public to false', async () => {
    const me = await signedIn('prof');
    const res = await me.api.post('/api/profiles/~/bare');
    expect(res.status).to.equal(201);
    expect(res.body).to.include({ description: '', is_public: false });
  });

  it('answers 409 profile_exists for a name already taken, including default', async () => {
    const me = await signedIn('prof');
    expect((await me.api.post('/api/profiles/~/dup', {})).status).to.equal(201);
    const again = await me.api.post('/api/profiles/~/dup', {});
    expect(again.status).to.equal(409);
    expect(again.body.error).to.deep.include({ code: 'profile_exists' });
    expect(again.body.error.message).to.contain('dup');
    expect((await me.api.post('/api/profiles/~/default', {})).body.error.code).to.equal('profile_exists');
  });

  it('lists own profiles oldest first, with ~ and the username alike', async () => {
    const me = await signedIn('prof');
    await me.api.post('/api/profiles/~/e-second', {});
    await me.api.post(`/api/profiles/${me.username}/f-third`, {});
    const tilde = await me.api.get('/api/profiles/~');
    const named = await me.api.get(`/api/profiles/${me.username}`);
    expect(tilde.status).to.equal(200);
    expect(tilde.body.map((p: { slug: string }) => p.slug)).to.deep.equal(
      ['default', 'e-second', 'f-third'].map((n) => `${me.username}/${n}`),
    );
    expect(named.body).to.deep.equal(tilde.body);
  });

  it('reads one own profile', async () => {
    const me = await signedIn('prof');
    await me.api.post('/api/profiles/~/one', { description: 'd' });
    const res = await me.api.get('/api/profiles/~/one');
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ slug: `${me.username}/one`, description: 'd' });
    expect((await me.api.get('/api/profiles/~/missing')).status).to.equal(404);
  });

  it("lists public profiles of every user, and reads another user's public profile but not a private one", async () => {
    const owner = await signedIn('owner');
    const reader = await signedIn('reader');
    expect((await owner.api.post('/api/profiles/~/shared', { description: 'public one', is_public: true })).status).to.equal(201);
    expect((await owner.api.post('/api/profiles/~/secret', { description: 'private one' })).status).to.equal(201);

    const pub = await reader.api.get('/api/profiles');
    const slugs = pub.body.map((p: { slug: string }) => p.slug);
    expect(slugs).to.include(`${owner.username}/shared`);
    expect(slugs).not.to.include(`${owner.username}/secret`);

    const shared = await reader.api.get(`/api/profiles/${owner.username}/shared`);
    expect(shared.status).to.equal(200);
    expect(shared.body.description).to.equal('public one');
    const secret = await reader.api.get(`/api/profiles/${owner.username}/secret`);
    expect(secret.status).to.equal(404);
    expect(secret.text).not.to.contain('private one');
  });

  it("answers 404 for another user's profile list, creation and deletion", async () => {
    const owner = await signedIn('owner');
    const intruder = await signedIn('intruder');
    await owner.api.post('/api/profiles/~/mine', { description: 'owner data' });
    const list = await intruder.api.get(`/api/profiles/${owner.username}`);
    expect(list.status).to.equal(404);
    expect(list.text).not.to.contain('owner data');
    expect((await intruder.api.post(`/api/profiles/${owner.username}/planted`, {})).status).to.equal(404);
    expect((await intruder.api.delete(`/api/profiles/${owner.username}/mine`)).status).to.equal(404);
    expect((await owner.api.get('/api/profiles/~/mine')).status, 'still there').to.equal(200);
    expect((await owner.api.get('/api/profiles/~/planted')).status, 'nothing planted').to.equal(404);
  });

  it('deletes a profile with 204, together with its installations', async () => {
    const me = await signedIn('prof');
    await me.api.post('/api/profiles/~/gone', {});
    const now = new Date();
    await getStack().db.models.Installation.create({
      owner: me.username, profile: 'gone', name: 'i1', servlet_owner: 'x', servlet_name: 'y', created_at: now, modified_at: now,
    });
    const res = await me.api.delete('/api/profiles/~/gone');
    expect(res.status).to.equal(204);
    expect(res.text).to.equal('');
    expect((await me.api.get('/api/profiles/~/gone')).status).to.equal(404);
    expect(await getStack().db.models.Installation.countDocuments({ owner: me.username, profile: 'gone' })).to.equal(0);
    expect((await me.api.delete('/api/profiles/~/gone')).status).to.equal(404);
  });

  it('refuses to delete the default profile with 409 profile_protected', async () => {
    const me = await signedIn('prof');
    const res = await me.api.delete('/api/profiles/~/default');
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('profile_protected');
    expect((await me.api.get('/api/profiles/~/default')).status).to.equal(200);
  });

  it('refuses to delete a profile that still has tasks with 409 profile_not_empty, and says so', async () => {
    const me = await signedIn('prof');
    await me.api.post('/api/profiles/~/busy', {});
    await me.api.put('/api/tasks/~/busy/t1', taskBody('openai', 'hi', 'gpt-x', 'sk-1'));
    const res = await me.api.delete('/api/profiles/~/busy');
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('profile_not_empty');
    expect(res.body.error.message).to.match(/busy.*1 task/);
    await me.api.delete('/api/tasks/~/busy/t1');
    expect((await me.api.delete('/api/profiles/~/busy')).status).to.equal(204);
  });

  it('pages a list with ?limit and a Link to the next page', async () => {
    const me = await signedIn('prof');
    for (const n of ['p1', 'p2', 'p3']) await me.api.post(`/api/profiles/~/${n}`, {});
    const seen: string[] = [];
    let path: string | null = '/api/profiles/~?limit=2';
    while (path) {
      const res = await me.api.get(path);
      expect(res.status).to.equal(200);
      expect(res.body.length).to.be.at.most(2);
      seen.push(...res.body.map((p: { slug: string }) => p.slug.split('/')[1]));
      path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
    }
    expect(seen).to.deep.equal(['default', 'p1', 'p2', 'p3']);
  });
});
