import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { libraryUser, publish } from './library';

describe('deleting a servlet', () => {
  it("removes every install of it, in any user's profile, and leaves other installs alone", async () => {
    const owner = await libraryUser('own');
    const user = await libraryUser('usr');
    await publish(owner, 'shared', 'greeter', 'visibility=public');
    await publish(owner, 'kept', 'greeter', 'visibility=public');
    expect((await owner.api.post('/api/profiles/~/default/installations', { servlet_slug: '~/shared' })).status).to.equal(201);
    expect((await user.api.post('/api/profiles/~/work', {})).status).to.equal(201);
    expect((await user.api.post('/api/profiles/~/work/installations', { servlet_slug: `${owner.username}/shared`, name: 'a' })).status).to.equal(201);
    expect((await user.api.post('/api/profiles/~/work/installations', { servlet_slug: `${owner.username}/kept`, name: 'b' })).status).to.equal(201);
    const { models } = getStack().db;
    expect(await models.Installation.countDocuments({ servlet_owner: owner.username, servlet_name: 'shared' }), 'installed twice before').to.equal(2);

    expect((await owner.api.delete('/api/servlets/~/shared')).status).to.equal(204);
    expect(await models.Installation.countDocuments({ servlet_owner: owner.username, servlet_name: 'shared' })).to.equal(0);
    const installs = (await user.api.get('/api/profiles/~/work/installations')).body.installs;
    expect(installs.map((i: { name: string }) => i.name)).to.deep.equal(['b']);
    expect((await owner.api.get('/api/profiles/~/default/installations')).body.installs).to.deep.equal([]);
    const search = await user.api.get('/api/servlets?q=greet');
    const owners = search.body.map((s: { slug: string }) => s.slug).filter((slug: string) => slug.startsWith(`${owner.username}/`));
    expect(owners).to.deep.equal([`${owner.username}/kept`]);
  });
});
