import { expect } from 'chai';
import { contentAddress } from '../../activities/servlets';
import { buildTestServlets, type TestServletName } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { libraryUser, publish } from './library';

const GREETER_TOOLS = [
  {
    name: 'greet',
    description: 'Greets someone by name',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
];

describe('servlet library: publish, read, list, delete', () => {
  let servlets: Record<TestServletName, Uint8Array>;
  before(async () => {
    servlets = await buildTestServlets();
  });

  it('publishes a raw module with 201, private by default, with the tools its describe lists', async () => {
    const me = await libraryUser();
    const res = await me.putModule('greeter', servlets.greeter, 'description=Says%20hello');
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.include({
      slug: `${me.username}/greeter`,
      name: 'greeter',
      meta: { description: 'Says hello', schema: { tools: GREETER_TOOLS } },
      installation_count: 0,
      visibility: 'private',
      content_address: contentAddress(servlets.greeter),
    });
    expect(new Date(res.body.created_at).toISOString()).to.equal(res.body.created_at);
    expect(res.body.modified_at).to.equal(res.body.created_at);
  });

  it('publishes the JSON form with the module in base64, ignoring unknown fields', async () => {
    const me = await libraryUser();
    const res = await me.api.put('/api/servlets/~/greeter', {
      module: Buffer.from(servlets.greeter).toString('base64'),
      description: 'json',
      visibility: 'public',
      extra: { anything: true },
    });
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.include({ visibility: 'public', meta: { description: 'json', schema: { tools: GREETER_TOOLS } } });
  });

  it('replaces the module with 200 on a PUT to an existing name, keeping description and visibility not given', async () => {
    const me = await libraryUser();
    const first = await publish(me, 'tool', 'greeter', 'description=first&visibility=public');
    const res = await me.putModule('tool', servlets.image);
    expect(res.status).to.equal(200);
    expect(res.body.content_address).to.equal(contentAddress(servlets.image));
    expect(res.body.meta.description).to.equal('first');
    expect(res.body.visibility).to.equal('public');
    expect(res.body.meta.schema.tools.map((t: { name: string }) => t.name)).to.not.deep.equal(['greet']);
    expect(res.body.created_at).to.equal(first.created_at);
    expect(Date.parse(res.body.modified_at)).to.be.at.least(Date.parse(first.modified_at));

    const changed = await me.putModule('tool', servlets.image, 'visibility=private&description=');
    expect(changed.body).to.deep.include({ visibility: 'private' });
    expect(changed.body.meta.description).to.equal('');
  });

  it('stores a module once per content hash, and deletes it when no servlet uses it any more', async () => {
    const { models } = getStack().db;
    const me = await libraryUser();
    const other = await libraryUser();
    // bytes no other test publishes, so the count below is this test's alone
    const bytes = new Uint8Array([...servlets.greeter, 0, 3, 2, 0x6e, 0x6f]);
    const address = contentAddress(bytes);
    expect((await me.putModule('a', bytes)).status).to.equal(201);
    expect((await me.putModule('b', bytes)).status).to.equal(201);
    expect((await other.putModule('c', bytes)).status).to.equal(201);
    expect(await models.Module.countDocuments({ content_address: address })).to.equal(1);

    await me.api.delete('/api/servlets/~/a');
    await me.putModule('b', servlets.image);
    expect(await models.Module.countDocuments({ content_address: address }), 'still used by c').to.equal(1);
    await other.api.delete('/api/servlets/~/c');
    expect(await models.Module.countDocuments({ content_address: address })).to.equal(0);
  });

  it('reads one servlet, lists own servlets oldest first, with ~ and the username alike', async () => {
    const me = await libraryUser();
    await publish(me, 'one', 'greeter');
    await publish(me, 'two', 'image', 'visibility=public');
    const one = await me.api.get(`/api/servlets/${me.username}/one`);
    expect(one.status).to.equal(200);
    expect(one.body.slug).to.equal(`${me.username}/one`);
    const list = await me.api.get('/api/servlets/~');
    expect(list.status).to.equal(200);
    expect(list.body.map((s: { slug: string }) => s.slug)).to.deep.equal([`${me.username}/one`, `${me.username}/two`]);
    expect((await me.api.get(`/api/servlets/${me.username}`)).body).to.deep.equal(list.body);
  });

  it('deletes with 204, then answers 404 for it', async () => {
    const me = await libraryUser();
    await publish(me, 'gone', 'greeter');
    expect((await me.api.delete('/api/servlets/~/gone')).status).to.equal(204);
    expect((await me.api.get('/api/servlets/~/gone')).status).to.equal(404);
    expect((await me.api.delete('/api/servlets/~/gone')).status).to.equal(404);
  });

  it("answers 404 for another user's private servlet on every path, and shows their public one", async () => {
    const owner = await libraryUser('own');
    const stranger = await libraryUser('str');
    await publish(owner, 'secret', 'greeter');
    await publish(owner, 'shared', 'greeter', 'visibility=public');

    const secret = await stranger.api.get(`/api/servlets/${owner.username}/secret`);
    expect(secret.status).to.equal(404);
    expect(secret.body.error.code).to.equal('not_found');
    expect((await stranger.api.get(`/api/servlets/${owner.username}/shared`)).body.slug).to.equal(`${owner.username}/shared`);
    expect((await stranger.api.get(`/api/servlets/${owner.username}`)).status).to.equal(404);
    expect((await stranger.api.delete(`/api/servlets/${owner.username}/shared`)).status).to.equal(404);
    expect((await stranger.api.put(`/api/servlets/${owner.username}/shared`, { module: 'AA==' })).status).to.equal(404);
    expect((await owner.api.get('/api/servlets/~/shared')).status, 'untouched').to.equal(200);
  });
});
