import type { Models } from './models';

/** A time the service noted about itself under `key` (e.g. `reconcile/<task queue>`: where the reconciler stopped), or null. */
export async function readServiceMark(models: Models, key: string): Promise<Date | null> {
  return (await models.ServiceState.findById(key).lean())?.at ?? null;
}

export async function writeServiceMark(models: Models, key: string, at: Date): Promise<void> {
  await models.ServiceState.updateOne({ _id: key }, { $set: { at } }, { upsert: true });
}
