import { expect } from 'chai';
import { listProfileTools } from '../../activities/tools';
import { getStack } from '../helpers/stack';
import { libraryUser, publish, type LibraryUser } from './library';

describe('installations: settings.approval', () => {
  const install = (user: LibraryUser, body: Record<string, unknown>) => user.api.post('/api/profiles/~/default/installations', body);
  const list = async (user: LibraryUser) => (await user.api.get('/api/profiles/~/default/installations')).body.installs;
  const listed = async (user: LibraryUser, name: string) => (await list(user)).find((i: { name: string }) => i.name === name);

  it('stores a list of tool names or "*" and shows it in the install answer and the list', async () => {
    const me = await libraryUser();
    // infinite-loop describes two tools, spin and ping
    await publish(me, 'loop', 'infinite-loop');
    const some = await install(me, { servlet_slug: '~/loop', name: 'some', settings: { config: { a: '1' }, approval: ['ping'] } });
    expect(some.status, some.text).to.equal(201);
    expect(some.body.settings.approval).to.deep.equal(['ping']);
    const all = await install(me, { servlet_slug: '~/loop', name: 'all', settings: { approval: '*' } });
    expect(all.status, all.text).to.equal(201);
    expect(all.body.settings.approval).to.equal('*');

    expect((await listed(me, 'some')).settings).to.deep.equal({
      config: { a: '1' },
      permissions: { network: { domains: ['*'] }, filesystem: { volumes: {} } },
      approval: ['ping'],
    });
    expect((await listed(me, 'all')).settings.approval).to.equal('*');
  });

  it('leaves approval out of the settings of installs that do not set it, null included', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    for (const [name, settings] of [['none', undefined], ['empty', {}], ['null', { approval: null }]] as const) {
      const res = await install(me, { servlet_slug: '~/g', name, ...(settings ? { settings } : {}) });
      expect(res.status, name).to.equal(201);
      expect(res.body.settings, name).to.have.keys(['config', 'permissions']);
      expect((await listed(me, name)).settings, name).to.have.keys(['config', 'permissions']);
    }
  });

  it('answers 400 naming settings.approval for anything but "*" or 1 to 200 distinct non-empty names', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    const bad: Array<[unknown, RegExp]> = [
      ['greet', /^settings\.approval: expected "\*" or a list of tool names$/],
      [true, /^settings\.approval: expected "\*" or a list of tool names$/],
      [{ greet: true }, /^settings\.approval: expected "\*" or a list of tool names$/],
      [[1], /^settings\.approval: /],
      [[], /^settings\.approval: expected at least one tool name, or "\*"$/],
      [[''], /^settings\.approval\.0: expected a tool name$/],
      [['x'.repeat(201)], /^settings\.approval\.0: expected at most 200 characters$/],
      [['greet', 'greet'], /^settings\.approval: expected each tool name once$/],
      [Array.from({ length: 201 }, (_, i) => `t${i}`), /^settings\.approval: expected at most 200 tool names$/],
    ];
    for (const [approval, message] of bad) {
      const res = await install(me, { servlet_slug: '~/g', settings: { approval } });
      expect(res.status, JSON.stringify(approval)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_request');
      expect(res.body.error.message, JSON.stringify(approval)).to.match(message);
    }
    expect(await list(me), 'nothing was installed').to.deep.equal([]);
  });

  it('answers 400 naming the tools the servlet does not have, and changes nothing', async () => {
    const me = await libraryUser();
    await publish(me, 'g', 'greeter');
    expect((await install(me, { servlet_slug: '~/g', settings: { approval: ['greet'] } })).status).to.equal(201);
    const cases: Array<[string[], string]> = [
      [['greet', 'nope'], `settings.approval: servlet "${me.username}/g" has no tool named "nope"`],
      [['Greet', 'other'], `settings.approval: servlet "${me.username}/g" has no tools named "Greet", "other"`],
      [['*'], `settings.approval: servlet "${me.username}/g" has no tool named "*"`],
    ];
    for (const [approval, message] of cases) {
      const res = await install(me, { servlet_slug: '~/g', settings: { approval } });
      expect(res.status, approval.join()).to.equal(400);
      expect(res.body.error).to.deep.equal({ code: 'invalid_request', message });
    }
    const many = await install(me, { servlet_slug: '~/g', settings: { approval: Array.from({ length: 12 }, (_, i) => `t${i}`) } });
    expect(many.body.error.message).to.match(/"t9", and 2 more$/);
    expect((await listed(me, 'g')).settings.approval).to.deep.equal(['greet']);
  });

  it('replaces approval with each install of the name: changed by a new list, cleared when left out', async () => {
    const me = await libraryUser();
    await publish(me, 'loop', 'infinite-loop');
    await install(me, { servlet_slug: '~/loop', settings: { approval: ['spin'] } });
    const changed = await install(me, { servlet_slug: '~/loop', settings: { approval: ['ping', 'spin'] } });
    expect(changed.status).to.equal(200);
    expect((await listed(me, 'loop')).settings.approval).to.deep.equal(['ping', 'spin']);
    expect((await install(me, { servlet_slug: '~/loop', settings: { approval: '*' } })).status).to.equal(200);
    expect((await listed(me, 'loop')).settings.approval).to.equal('*');
    expect((await install(me, { servlet_slug: '~/loop', settings: { config: { a: '1' } } })).status).to.equal(200);
    expect((await listed(me, 'loop')).settings).to.not.have.property('approval');
    const stored = await getStack().db.models.Installation.findOne({ owner: me.username, name: 'loop' }).lean();
    expect(stored!.approval).to.equal(null);
  });

  describe('listProfileTools', () => {
    const specsOf = async (user: LibraryUser) => {
      const specs = await listProfileTools(getStack().db.models, user.username, 'default');
      return Object.fromEntries(specs.map((s) => [s.name, s]));
    };

    it('marks approval: true on the tools the install names or on all of them for "*", and leaves others without the field', async () => {
      const me = await libraryUser();
      await publish(me, 'loop', 'infinite-loop');
      await publish(me, 'g', 'greeter');
      await install(me, { servlet_slug: '~/loop', name: 'some', settings: { approval: ['ping'] } });
      await install(me, { servlet_slug: '~/loop', name: 'all', settings: { approval: '*' } });
      await install(me, { servlet_slug: '~/loop', name: 'none' });
      await install(me, { servlet_slug: '~/g', name: 'hello' });

      const specs = await specsOf(me);
      expect(Object.keys(specs).sort()).to.deep.equal(['all__ping', 'all__spin', 'hello__greet', 'none__ping', 'none__spin', 'some__ping', 'some__spin']);
      for (const name of ['some__ping', 'all__ping', 'all__spin']) expect(specs[name], name).to.include({ approval: true });
      for (const name of ['some__spin', 'none__ping', 'none__spin', 'hello__greet']) expect(specs[name], name).to.not.have.property('approval');
      expect(specs.some__ping).to.include({ install: 'some', tool: 'ping' });
    });

    it('marks every tool of an install whose approval list names a tool its servlet no longer has (fails closed)', async () => {
      const me = await libraryUser();
      await publish(me, 'loop', 'infinite-loop');
      await install(me, { servlet_slug: '~/loop', name: 'renamed', settings: { approval: ['ping'] } });
      // As after the servlet was replaced by a version whose `ping` is gone: the stored list names a missing tool.
      await getStack().db.conn.db!.collection('installations').updateOne({ owner: me.username, name: 'renamed' }, { $set: { approval: ['pong'] } });
      const specs = await specsOf(me);
      expect(specs.renamed__ping, 'ping').to.include({ approval: true });
      expect(specs.renamed__spin, 'spin').to.include({ approval: true });
    });

    it('marks nothing for an install stored before approval existed', async () => {
      const me = await libraryUser();
      await publish(me, 'g', 'greeter');
      await install(me, { servlet_slug: '~/g', settings: { approval: '*' } });
      await getStack().db.conn.db!.collection('installations').updateOne({ owner: me.username, name: 'g' }, { $unset: { approval: '' } });
      expect((await specsOf(me)).g__greet).to.not.have.property('approval');
      expect((await listed(me, 'g')).settings).to.have.keys(['config', 'permissions']);
    });
  });
});
