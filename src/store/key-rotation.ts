import type { Model } from 'mongoose';
import type { Models } from './models';
import { open, seal, type Keyring, type SealedSecret } from './secrets';

/**
 * Re-encrypts every stored secret under the current master key: task keys (tasks and task_versions), tasks' webhook
 * secrets (tasks.webhook.secret), servlet install configuration (installations.config) and MCP installs' URLs, header
 * values and OAuth client secrets (installations.mcp.url_sealed, installations.mcp.headers, installations.mcp.oauth.secret). Old ciphertexts are read
 * with the retired keys. Each document is rewritten only if its ciphertext is still the one read, so a concurrent
 * save (already under the current key) is never overwritten with older data. Safe to run again: what is already
 * current is only counted.
 */
export interface RotationCount {
  collection: string;
  /** Re-encrypted under the current key (or, with dryRun, would be). */
  rotated: number;
  alreadyCurrent: number;
  /** Changed by someone else while rotating: already rewritten by a save under the current key. */
  changedMeanwhile: number;
  /** Sealed under a key that is neither current nor retired, or altered: left as is. */
  unreadable: number;
}

const TARGETS: Array<{ collection: string; model: (m: Models) => Model<any>; field: string }> = [
  { collection: 'tasks', model: (m) => m.Task, field: 'key' },
  { collection: 'task_versions', model: (m) => m.TaskVersion, field: 'key' },
  { collection: 'installations', model: (m) => m.Installation, field: 'config' },
  // Tasks' webhook secrets (store/webhooks.ts), counted apart from their provider keys.
  { collection: 'tasks.webhook', model: (m) => m.Task, field: 'webhook.secret' },
  // MCP installs (store/mcp-installs.ts): the whole URL, and the header values.
  { collection: 'installations.mcp.url', model: (m) => m.Installation, field: 'mcp.url_sealed' },
  { collection: 'installations.mcp.headers', model: (m) => m.Installation, field: 'mcp.headers' },
  { collection: 'installations.mcp.oauth', model: (m) => m.Installation, field: 'mcp.oauth.secret' },
];

export async function rotateSecrets(models: Models, keyring: Keyring, options: { dryRun?: boolean } = {}): Promise<RotationCount[]> {
  const counts: RotationCount[] = [];
  for (const target of TARGETS) {
    const model = target.model(models);
    const kidPath = `${target.field}.kid`;
    const count: RotationCount = { collection: target.collection, rotated: 0, alreadyCurrent: 0, changedMeanwhile: 0, unreadable: 0 };
    count.alreadyCurrent = await model.countDocuments({ [kidPath]: keyring.current.id });
    const stale = model.find({ [target.field]: { $ne: null }, [kidPath]: { $ne: keyring.current.id } }, { [target.field]: 1 }).lean().cursor();
    for await (const doc of stale) {
      const sealed = target.field.split('.').reduce<any>((value, part) => value?.[part], doc) as SealedSecret;
      let resealed: SealedSecret;
      try {
        resealed = seal(keyring, open(keyring, sealed));
      } catch {
        count.unreadable++;
        continue;
      }
      if (options.dryRun) {
        count.rotated++;
        continue;
      }
      const res = await model.updateOne(
        { _id: doc._id, [kidPath]: sealed.kid, [`${target.field}.data`]: sealed.data },
        { $set: { [target.field]: resealed } },
      );
      if (res.modifiedCount === 1) count.rotated++;
      else count.changedMeanwhile++;
    }
    counts.push(count);
  }
  return counts;
}
