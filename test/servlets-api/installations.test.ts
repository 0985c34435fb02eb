import { expect } from 'chai';
import { contentAddress } from '../../activities/servlets';
import { buildTestServlets } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { libraryUser, publish, type LibraryUser } from './library';

const SECRET = 'sk-install-secret-6f1e0c2d9a';

describe('servlet installations', () => {
  const install = (user: LibraryUser, body: Record<string, unknown>, profile = 'default') =>
    user.api.post(`/api/profiles/~/${profile}/installations`, body);
  const list = async (user: LibraryUser, profile = 'default') => (await user.api.get(`/api/profiles/~/${profile}/installations`)).body.installs;

  it('installs with 201 and lists the install in the compatibility shape, configuration included for its owner', async () => {
    const me = await libraryUser();
    await publish(me, 'greeter', 'greeter', 'description=hi');
    const res = await install(me, {
      servlet_slug: `${me.username}/greeter`,
      name: 'hello',
      settings: { config: { greeting: 'Howdy', api_key: SECRET }, network: { domains: ['API.example.com', '*.example.org'] } },
      allow_update: true,
    });
    expect(res.status).to.equal(201);

    const [listed] = await list(me);
    expect(listed).to.deep.include({
      name: 'hello',
      settings: {
        config: { greeting: 'Howdy', api_key: SECRET },
        permissions: { network: { domains: ['api.example.com', '*.example.org'] }, filesystem: { volumes: {} } },
      },
      servlet: {
        slug: `${me.username}/greeter`,
        has_client: false,
        meta: { description: 'hi', schema: { tools: [res.body.servlet.meta.schema.tools[0]] } },
      },
    });
    expect(listed.binding).to.deep.equal({ id: res.body.binding.id, contentAddress: contentAddress((await buildTestServlets()).greeter) });
    expect(listed.servlet.meta.schema.tools[0]).to.have.keys(['name', 'description', 'inputSchema']);
  });

  it('names the install after the servlet by default, and answers 200 when it replaces an install', async () => {
    const me = await libraryUser();
    await publish(me, 'greeter', 'greeter');
    expect((await install(me, { servlet_slug: '~/greeter', settings: { config: { a: '1' } } })).status).to.equal(201);
    const again = await install(me, { servlet_slug: `${me.username}/greeter`, settings: {} });
    expect(again.status).to.equal(200);
    const [listed] = await list(me);
    expect(listed.name).to.equal('greeter');
    expect(listed.settings.config, 'a replace takes the settings it is given').to.deep.equal({});
  });

  it('answers 409 install_exists when allow_update is false and the name is taken', async () => {
    const me = await libraryUser();
    await publish(me, 'greeter', 'greeter');
    await install(me, { servlet_slug: '~/greeter' });
    const res = await install(me, { servlet_slug: '~/greeter', settings: { config: { x: 'y' } }, allow_update: false });
    expect(res.status).to.equal(409);
    expect(res.body.error.code).to.equal('install_exists');
    expect((await list(me))[0].settings.config).to.deep.equal({});
  });

  it('maps network settings: none or ["*"] is every host (shown as ["*"]), a list narrows, [] is no network', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    const cases: Array<[string, unknown, string[] | null, string[]]> = [
      ['none', {}, null, ['*']],
      ['star', { network: { domains: ['*'] } }, null, ['*']],
      ['star-in-list', { network: { domains: ['a.com', '*'] } }, null, ['*']],
      ['list', { network: { domains: ['a.com', 'A.com', 'b.org'] } }, ['a.com', 'b.org'], ['a.com', 'b.org']],
      ['empty', { network: { domains: [] } }, [], []],
      ['as-listed', { permissions: { network: { domains: ['c.net'] } } }, ['c.net'], ['c.net']],
    ];
    for (const [name, settings] of cases) expect((await install(me, { servlet_slug: '~/g', name, settings })).status, name).to.equal(201);
    const installs = await list(me);
    const stored = await getStack().db.models.Installation.find({ owner: me.username }).lean();
    for (const [name, , domains, shown] of cases) {
      expect(stored.find((i) => i.name === name)!.domains, name).to.deep.equal(domains);
      expect(installs.find((i: { name: string }) => i.name === name).settings.permissions.network.domains, name).to.deep.equal(shown);
    }
  });

  it('keeps the configuration sealed in the database and out of the logs', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    await install(me, { servlet_slug: '~/g', settings: { config: { api_key: SECRET } } });
    expect((await list(me))[0].settings.config.api_key).to.equal(SECRET);
    const raw = await getStack().db.conn.db!.collection('installations').findOne({ owner: me.username });
    expect(raw!.config).to.include.keys(['kid', 'iv', 'tag', 'data']);
    expect(JSON.stringify(raw)).to.not.include(SECRET);
    expect(JSON.stringify(raw)).to.not.include(Buffer.from(SECRET).toString('base64'));
    expect(getStack().logs.text()).to.not.include(SECRET);
  });

  it('installs another user\'s public servlet, but not their private one (404)', async () => {
    const owner = await libraryUser('own');
    const me = await libraryUser();
    await publish(owner, 'pub', 'greeter', 'visibility=public');
    await publish(owner, 'priv', 'greeter');
    expect((await install(me, { servlet_slug: `${owner.username}/pub` })).status).to.equal(201);
    const priv = await install(me, { servlet_slug: `${owner.username}/priv` });
    expect(priv.status).to.equal(404);
    expect(priv.body.error.code).to.equal('not_found');
    expect((await install(me, { servlet_slug: `${owner.username}/nothing` })).status).to.equal(404);
  });

  it("answers 404 for another user's profile and installs, whatever the method", async () => {
    const owner = await libraryUser('own');
    const me = await libraryUser();
    await publish(owner, 'g', 'greeter', 'visibility=public');
    await install(owner, { servlet_slug: '~/g', settings: { config: { api_key: SECRET } } });
    await owner.api.post('/api/profiles/~/open', { is_public: true });
    const base = `/api/profiles/${owner.username}`;
    expect((await me.api.get(`${base}/default/installations`)).status).to.equal(404);
    expect((await me.api.get(`${base}/open/installations`)).status, 'public profile').to.equal(404);
    expect((await me.api.post(`${base}/default/installations`, { servlet_slug: `${owner.username}/g` })).status).to.equal(404);
    expect((await me.api.delete(`${base}/default/installations/g`)).status).to.equal(404);
    expect((await me.api.get('/api/profiles/~/nope/installations')).status, 'own missing profile').to.equal(404);
    expect(await list(owner)).to.have.length(1);
  });

  it('uninstalls with 204, then 404', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    await install(me, { servlet_slug: '~/g' });
    expect((await me.api.delete('/api/profiles/~/default/installations/g')).status).to.equal(204);
    expect(await list(me)).to.deep.equal([]);
    expect((await me.api.delete('/api/profiles/~/default/installations/g')).status).to.equal(404);
  });

  it('answers 400 naming the field for bad slugs, names, config values and hosts, and ignores unknown fields', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /^servlet_slug: /],
      [{ servlet_slug: 'no-slash' }, /^servlet_slug: expected "<owner>\/<servlet>"/],
      [{ servlet_slug: '~/g', name: 'bad name' }, /^name: /],
      [{ servlet_slug: '~/g', settings: { config: { n: 5 } } }, /^settings\.config\.n: /],
      [{ servlet_slug: '~/g', settings: { network: { domains: ['http://x.com/'] } } }, /^settings\.network\.domains\.0: /],
      [{ servlet_slug: '~/g', allow_update: 'yes' }, /^allow_update: /],
    ];
    for (const [body, message] of bad) {
      const res = await install(me, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.message, JSON.stringify(body)).to.match(message);
    }
    expect((await me.api.post('/api/profiles/~/bad%20profile/installations', { servlet_slug: '~/g' })).status).to.equal(400);
    const ok = await install(me, { servlet_slug: '~/g', settings: { filesystem: { volumes: { '/etc': '/etc' } }, other: 1 }, whatever: true });
    expect(ok.status).to.equal(201);
    expect(ok.body.settings.permissions.filesystem).to.deep.equal({ volumes: {} });
  });
});
