import { expect } from 'chai';
import { openTaskKey, findTask, findTaskVersion, maxTokensFor } from '../../src/store/tasks';
import { api, signedIn, startApi, taskBody, uniqueUser, sessionFor } from '../helpers/api';
import { getStack } from '../helpers/stack';

/** Everything an attacker with a database dump, the API or the logs would see, as text. */
async function exposedText(owner: string, responses: string[]) {
  const raw = getStack().db.conn.db!;
  const tasks = await raw.collection('tasks').find({ owner }).toArray();
  const versions = await raw.collection('task_versions').find({ task_id: { $in: tasks.map((t) => t._id) } }).toArray();
  return { tasks, versions, text: [JSON.stringify(tasks), JSON.stringify(versions), ...responses, getStack().logs.text()].join('\n') };
}

describe('provider keys', () => {
  it('never shows the key in clear in the database, the API responses or the logs', async () => {
    const me = await signedIn('keys');
    const secret = `sk-live-${uniqueUser('secret')}`;
    const responses: string[] = [];
    responses.push((await me.api.put('/api/tasks/~/default/k1', taskBody('openai', 'x', 'm', secret))).text);
    responses.push((await me.api.put('/api/tasks/~/default/k1', taskBody('openai', 'y', 'm'))).text);
    responses.push((await me.api.get('/api/tasks/~/default/k1')).text);
    responses.push((await me.api.get('/api/tasks/~')).text);
    responses.push((await me.api.get('/api/profiles/~/default/tasks')).text);
    // A rejected body that carries the key must not echo it either.
    responses.push((await me.api.put('/api/tasks/~/default/k1', { runner: 'openai', openai: { prompt: 7 }, settings: { key: secret } })).text);

    const { tasks, versions, text } = await exposedText(me.username, responses);
    expect(tasks).to.have.length(1);
    expect(versions).to.have.length(2);
    expect(text).not.to.contain(secret);
    expect(text).not.to.contain(secret.slice(8));
    expect(text).not.to.contain(Buffer.from(secret).toString('base64'));
    for (const doc of [...tasks, ...versions]) {
      expect(doc.key).to.include.keys(['kid', 'iv', 'tag', 'data']);
      expect(doc.key.kid).to.equal(getStack().config.MASTER_KEY.id);
    }
    for (const r of responses.slice(0, 5)) expect(JSON.parse(r)).to.satisfy((b: any) => JSON.stringify(b).includes('"key_set":true'));
  });

  it('keeps the stored key when an update has no settings.key, and decrypts it only through openTaskKey', async () => {
    const me = await signedIn('keys');
    const { db, keyring, config } = getStack();
    await me.api.put('/api/tasks/~/default/keep', taskBody('anthropic', 'a', 'c', 'sk-keep-1'));
    const res = await me.api.put('/api/tasks/~/default/keep', taskBody('anthropic', 'b', 'c'));
    expect(res.body.settings).to.deep.equal({ key_set: true });
    const task = await findTask(db.models, { owner: me.username, profile: 'default', name: 'keep' });
    const v2 = await findTaskVersion(db.models, task!._id, 2);
    expect(openTaskKey(keyring, config, v2!)).to.equal('sk-keep-1');
    expect(maxTokensFor(config, v2!)).to.equal(config.ANTHROPIC_MAX_TOKENS);
  });

  it('replaces the key when an update brings a new one; runs of the old version keep the old key', async () => {
    const me = await signedIn('keys');
    const { db, keyring, config } = getStack();
    await me.api.put('/api/tasks/~/default/rep', taskBody('openai', 'a', 'm', 'sk-old'));
    await me.api.put('/api/tasks/~/default/rep', taskBody('openai', 'a', 'm', 'sk-new'));
    const task = await findTask(db.models, { owner: me.username, profile: 'default', name: 'rep' });
    expect(openTaskKey(keyring, config, (await findTaskVersion(db.models, task!._id, 1))!)).to.equal('sk-old');
    expect(openTaskKey(keyring, config, (await findTaskVersion(db.models, task!._id, 2))!)).to.equal('sk-new');
  });

  it('refuses with 400 missing_key a task without its own key when the operator has none for its runner', async () => {
    const me = await signedIn('keys');
    const res = await me.api.put('/api/tasks/~/default/nokey', taskBody('openai', 'x', 'm'));
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('missing_key');
    expect(res.body.error.message).to.match(/^settings\.key: .*OPENAI_API_KEY/);
    const short = await me.api.put('/api/tasks/~/default/nokey', { provider: 'anthropic', prompt: 'x' });
    expect(short.body.error.message).to.contain('ANTHROPIC_API_KEY');
    expect((await me.api.get('/api/tasks/~/default/nokey')).status, 'nothing stored').to.equal(404);
  });

  it('does not carry one provider key over to another runner', async () => {
    const me = await signedIn('keys');
    await me.api.put('/api/tasks/~/default/carry', taskBody('openai', 'x', 'm', 'sk-openai'));
    const res = await me.api.put('/api/tasks/~/default/carry', taskBody('anthropic', 'x', 'c'));
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('missing_key');
  });

  describe('with an operator key configured', () => {
    let server: Awaited<ReturnType<typeof startApi>>;
    before(async () => {
      server = await startApi({ OPENAI_API_KEY: 'sk-operator-openai' });
    });
    after(() => server.close());

    it("saves a task without its own key, and runs use the operator's key", async () => {
      const username = uniqueUser('op');
      const me = api(await sessionFor(username), server.url);
      const res = await me.put('/api/tasks/~/default/op', { provider: 'openai', prompt: 'hi' });
      expect(res.status).to.equal(201);
      expect(res.body.settings).to.deep.equal({ key_set: false });
      const { db, keyring } = getStack();
      const task = await findTask(db.models, { owner: username, profile: 'default', name: 'op' });
      expect(task!.key).to.equal(null);
      const config = getStack().configWith({ OPENAI_API_KEY: 'sk-operator-openai' });
      expect(openTaskKey(keyring, config, (await findTaskVersion(db.models, task!._id, 1))!)).to.equal('sk-operator-openai');
    });

    it('drops the own key when settings.key is null', async () => {
      const me = api(await sessionFor(uniqueUser('op')), server.url);
      await me.put('/api/tasks/~/default/drop', taskBody('openai', 'x', 'm', 'sk-own'));
      const res = await me.put('/api/tasks/~/default/drop', { ...taskBody('openai', 'x', 'm'), settings: { key: null } });
      expect(res.status).to.equal(200);
      expect(res.body.settings).to.deep.equal({ key_set: false });
    });
  });
});
