import crypto from 'node:crypto';
import { expect } from 'chai';
import { libraryUser, publish } from './library';

describe('servlet search', () => {
  /** A word no other test publishes, so each search below sees only this test's servlets. */
  const word = () => `w${crypto.randomBytes(4).toString('hex')}`;
  const slugs = (body: Array<{ slug: string }>) => body.map((s) => s.slug);

  it('finds public servlets of every user and the caller\'s own private ones, in the compatibility shape', async () => {
    const w = word();
    const me = await libraryUser('me');
    const other = await libraryUser('oth');
    await publish(me, `${w}-mine`, 'greeter');
    await publish(other, `${w}-public`, 'greeter', 'visibility=public&description=shared');
    await publish(other, `${w}-private`, 'greeter');

    const res = await me.api.get(`/api/servlets?q=${w}`);
    expect(res.status).to.equal(200);
    expect(slugs(res.body)).to.have.members([`${me.username}/${w}-mine`, `${other.username}/${w}-public`]);
    const shared = res.body.find((s: { slug: string }) => s.slug.endsWith('-public'));
    expect(Object.keys(shared).sort()).to.deep.equal(['created_at', 'installation_count', 'meta', 'modified_at', 'slug', 'visibility']);
    expect(shared).to.deep.include({ visibility: 'public', installation_count: 0 });
    expect(shared.meta.description).to.equal('shared');
    expect(shared.meta.schema.tools[0].name).to.equal('greet');
    expect(slugs((await other.api.get(`/api/servlets?q=${w}`)).body)).to.have.members([`${other.username}/${w}-public`, `${other.username}/${w}-private`]);
  });

  it('matches name, description and tool names regardless of case', async () => {
    const w = word();
    const me = await libraryUser();
    await publish(me, `${w}-by-name`, 'image');
    await publish(me, 'plain-a', 'image', `description=${w.toUpperCase()}%20in%20the%20description`);
    const byName = (await me.api.get(`/api/servlets?q=${w.toUpperCase()}`)).body;
    expect(slugs(byName)).to.have.members([`${me.username}/${w}-by-name`, `${me.username}/plain-a`]);

    // the greeter's one tool is `greet`; only this user's private servlets and public ones are searched
    const byTool = (await me.api.get('/api/servlets?q=GREET')).body as Array<{ slug: string }>;
    const mineByTool = slugs(byTool).filter((s) => s.startsWith(`${me.username}/`));
    expect(mineByTool).to.deep.equal([]);
    await publish(me, 'tool-only', 'greeter');
    const again = slugs((await me.api.get('/api/servlets?q=GrEeT')).body).filter((s) => s.startsWith(`${me.username}/`));
    expect(again).to.deep.equal([`${me.username}/tool-only`]);
  });

  it('takes every character of q literally: regex syntax matches only itself and never fails', async () => {
    const me = await libraryUser();
    const w = word();
    await publish(me, `${w}-x`, 'greeter', `description=${encodeURIComponent(`costs $5 (a+b)* [${w}]`)}`);
    for (const q of ['.*', '^', '\\', `${w}.x`, 'a.b']) {
      const res = await me.api.get(`/api/servlets?q=${encodeURIComponent(q)}`);
      expect(res.status, q).to.equal(200);
      expect(slugs(res.body).filter((s) => s.startsWith(`${me.username}/`)), q).to.deep.equal([]);
    }
    for (const q of ['$5 (a+b)*', `[${w}]`, '(', '[']) {
      const res = await me.api.get(`/api/servlets?q=${encodeURIComponent(q)}`);
      expect(slugs(res.body).filter((s) => s.startsWith(`${me.username}/`)), q).to.deep.equal([`${me.username}/${w}-x`]);
    }
  });

  it('counts installs of a servlet across users', async () => {
    const w = word();
    const owner = await libraryUser();
    const a = await libraryUser();
    const b = await libraryUser();
    await publish(owner, w, 'greeter', 'visibility=public');
    for (const user of [a, b]) {
      expect((await user.api.post('/api/profiles/~/default/installations', { servlet_slug: `${owner.username}/${w}` })).status).to.equal(201);
    }
    await a.api.post('/api/profiles/~/default/installations', { servlet_slug: `${owner.username}/${w}`, name: 'second' });
    const [found] = (await owner.api.get(`/api/servlets?q=${w}`)).body;
    expect(found.installation_count).to.equal(3);
  });

  it('pages with ?limit and a Link to the next page, and refuses an over-long q', async () => {
    const w = word();
    const me = await libraryUser();
    for (const n of [1, 2, 3]) await publish(me, `${w}-${n}`, 'greeter');
    const first = await me.api.get(`/api/servlets?q=${w}&limit=2`);
    expect(slugs(first.body)).to.deep.equal([`${me.username}/${w}-1`, `${me.username}/${w}-2`]);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')![1]!;
    expect(slugs((await me.api.get(next)).body)).to.deep.equal([`${me.username}/${w}-3`]);
    const long = await me.api.get(`/api/servlets?q=${'x'.repeat(201)}`);
    expect(long.status).to.equal(400);
    expect(long.body.error.message).to.match(/^query\.q: /);
  });
});
