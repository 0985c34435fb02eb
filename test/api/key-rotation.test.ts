import crypto from 'node:crypto';
import { expect } from 'chai';
import { rotateSecrets } from '../../src/store/key-rotation';
import { open, openJson, seal, sealJson, type Keyring, type MasterKey } from '../../src/store/secrets';
import { findTask, findTaskVersion, openTaskKey } from '../../src/store/tasks';
import { signedIn, taskBody } from '../helpers/api';
import { getStack } from '../helpers/stack';

const newKey = (id: string): MasterKey => ({ id, key: crypto.randomBytes(32) });

describe('master key rotation', () => {
  it('re-encrypts task keys and install configuration under the new key; retired keys still read old ciphertexts', async () => {
    const { db, keyring: original, config } = getStack();
    const me = await signedIn('rot');
    await me.api.put('/api/tasks/~/default/r1', taskBody('openai', 'x', 'm', 'sk-rotate-1'));
    await me.api.put('/api/tasks/~/default/r1', taskBody('openai', 'y', 'm', 'sk-rotate-2'));
    const now = new Date();
    const install = await db.models.Installation.create({
      owner: me.username, profile: 'default', name: 'svc', servlet_owner: 'o', servlet_name: 's',
      config: sealJson(original, { token: 'install-secret' }), created_at: now, modified_at: now,
    });
    const task = (await findTask(db.models, { owner: me.username, profile: 'default', name: 'r1' }))!;
    const oldCiphertext = task.key!;

    // The operator's new configuration: a fresh MASTER_KEY, the old one in MASTER_KEYS_RETIRED.
    const rotated: Keyring = { current: newKey('k-next'), retired: [original.current, ...original.retired] };
    const dry = await rotateSecrets(db.models, rotated, { dryRun: true });
    expect(dry.find((c) => c.collection === 'tasks')!.rotated).to.be.at.least(1);
    expect((await findTask(db.models, task))!.key!.kid, 'dry run changes nothing').to.equal(original.current.id);

    const counts = await rotateSecrets(db.models, rotated);
    const by = Object.fromEntries(counts.map((c) => [c.collection, c]));
    expect(by.tasks!.rotated).to.be.at.least(1);
    expect(by.task_versions!.rotated).to.be.at.least(2);
    expect(by.installations!.rotated).to.be.at.least(1);

    const after = (await findTask(db.models, task))!;
    expect(after.key!.kid).to.equal('k-next');
    expect(openTaskKey(rotated, config, after)).to.equal('sk-rotate-2');
    expect(openTaskKey(rotated, config, (await findTaskVersion(db.models, task._id, 1))!)).to.equal('sk-rotate-1');
    const inst = (await db.models.Installation.findById(install._id).lean())!;
    expect(inst.config!.kid).to.equal('k-next');
    expect(openJson(rotated, inst.config as never)).to.deep.equal({ token: 'install-secret' });

    // A ciphertext made before the rotation (a backup, a straggler) still opens with the retired key...
    expect(open(rotated, oldCiphertext)).to.equal('sk-rotate-2');
    // ...and nothing is left for a second run to do.
    const again = await rotateSecrets(db.models, rotated);
    expect(again.every((c) => c.rotated === 0)).to.equal(true);
    expect(again.find((c) => c.collection === 'tasks')!.alreadyCurrent).to.be.at.least(1);

    // Put everything back under the stack's key so later tests (and the running API) can read it.
    await rotateSecrets(db.models, { current: original.current, retired: [rotated.current] });
    expect((await findTask(db.models, task))!.key!.kid).to.equal(original.current.id);
  });

  it('counts and leaves alone a secret sealed under a key it does not have', async () => {
    const { db, keyring } = getStack();
    const me = await signedIn('rot');
    await me.api.put('/api/tasks/~/default/lost', taskBody('openai', 'x', 'm', 'sk-lost'));
    const foreign = seal({ current: newKey('k-lost'), retired: [] }, 'sk-lost');
    await db.models.Task.updateOne({ owner: me.username, name: 'lost' }, { $set: { key: foreign } });
    // A real run (not a dry run, which writes nothing anyway): everything else is already under the current key.
    const counts = await rotateSecrets(db.models, keyring);
    expect(counts.find((c) => c.collection === 'tasks')!.unreadable).to.be.at.least(1);
    const kept = (await db.models.Task.findOne({ owner: me.username, name: 'lost' }).lean())!.key!;
    expect(kept.kid).to.equal('k-lost');
    expect(kept.data, 'the ciphertext is left as it was').to.equal(foreign.data);
    await db.models.Task.deleteOne({ owner: me.username, name: 'lost' });
  });
});
