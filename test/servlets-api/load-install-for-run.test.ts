import { expect } from 'chai';
import { contentAddress } from '../../activities/servlets';
import { loadInstallForRun } from '../../src/store/installations';
import { buildTestServlets } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { libraryUser, padded, publish } from './library';

describe('loadInstallForRun', () => {
  const load = (owner: string, profile: string, name: string) => loadInstallForRun(getStack().db.models, getStack().keyring, owner, profile, name);

  it("gives a run the install's module, opened configuration and hosts", async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    await me.api.post('/api/profiles/~/default/installations', {
      servlet_slug: '~/g',
      name: 'hello',
      settings: { config: { greeting: 'Hi' }, network: { domains: ['api.example.com'] } },
    });
    const found = await load(me.username, 'default', 'hello');
    const greeter = (await buildTestServlets()).greeter;
    expect(found).to.deep.include({ contentAddress: contentAddress(greeter), config: { greeting: 'Hi' }, domains: ['api.example.com'] });
    expect(Buffer.from(await found!.loadModule()).equals(Buffer.from(greeter))).to.equal(true);
    expect(found!.modifiedAt).to.be.instanceOf(Date);
  });

  it('gives null hosts for every host, and a later modifiedAt once the servlet is replaced', async () => {
    const me = await libraryUser();
    // bytes no other servlet has, so replacing them deletes them
    expect((await me.putModule('g', padded((await buildTestServlets()).greeter, 11, 0x44))).status).to.equal(201);
    await me.api.post('/api/profiles/~/default/installations', { servlet_slug: '~/g' });
    const before = (await load(me.username, 'default', 'g'))!;
    expect(before.domains).to.equal(null);
    expect(before.config).to.deep.equal({});
    await publish(me, 'g', 'image');
    const after = (await load(me.username, 'default', 'g'))!;
    expect(after.contentAddress).to.not.equal(before.contentAddress);
    expect(after.modifiedAt.getTime()).to.be.at.least(before.modifiedAt.getTime());
    await before.loadModule().then(
      () => expect.fail('the replaced module is no longer stored'),
      (err: Error) => expect(err.message).to.match(/no longer stored/),
    );
  });

  it('gives null for an install that does not exist or whose servlet was deleted', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    expect((await me.api.post('/api/profiles/~/default/installations', { servlet_slug: '~/g' })).status).to.equal(201);
    expect(await load(me.username, 'default', 'g'), 'loads while its servlet exists').not.to.equal(null);
    expect(await load(me.username, 'default', 'nope')).to.equal(null);
    expect(await load(me.username, 'other', 'g')).to.equal(null);
    expect((await me.api.delete('/api/servlets/~/g')).status).to.equal(204);
    expect(await load(me.username, 'default', 'g')).to.equal(null);
  });
});
