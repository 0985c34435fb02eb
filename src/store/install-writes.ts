import { isDuplicateKey } from './connect';
import { markInstallsChanged } from './install-changes';
import type { Models } from './models';

/**
 * Writes the install `ref` with `set` (servlet or MCP): created, or replaced when `allowUpdate` (else `taken()` is
 * thrown), a concurrent create of the same name taken as that, the profile's install list stamped changed. True when created.
 */
export async function writeInstall(
  models: Models,
  ref: { owner: string; profile: string; name: string },
  set: Record<string, unknown>,
  options: { allowUpdate: boolean; taken: () => Error; now: Date },
): Promise<boolean> {
  let created = false;
  if (await models.Installation.exists(ref)) {
    if (!options.allowUpdate) throw options.taken();
    await models.Installation.updateOne(ref, { $set: set });
  } else {
    try {
      await models.Installation.create({ ...ref, ...set, created_at: options.now });
      created = true;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      if (!options.allowUpdate) throw options.taken();
      await models.Installation.updateOne(ref, { $set: set });
    }
  }
  await markInstallsChanged(models, [ref]);
  return created;
}
