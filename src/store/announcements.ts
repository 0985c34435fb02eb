import type { Models } from './models';
import { WRITTEN_RUN, type WrittenRun } from './runs';

/** Notes a closed run whose announcement failed, for the reconciler (once however often it is noted). */
export async function noteDeferredAnnouncement(models: Models, runId: string, at = new Date()): Promise<void> {
  await models.DeferredAnnouncement.collection.updateOne({ _id: runId as never }, { $setOnInsert: { at } }, { upsert: true });
}

/** Up to `limit` closed runs whose announcement waits (a small collection: one document per failed announcement). */
export async function deferredAnnouncements(models: Models, limit: number): Promise<string[]> {
  return (await models.DeferredAnnouncement.find({}, { _id: 1 }).limit(limit).lean<Array<{ _id: string }>>()).map((d) => d._id);
}

export async function clearDeferredAnnouncement(models: Models, runId: string): Promise<void> {
  await models.DeferredAnnouncement.collection.deleteOne({ _id: runId as never });
}

/** What announcing a run's close needs of its record (by `_id`, a few fields; not its pages of entries): null when it is gone. */
export async function findClosingState(models: Models, runId: string): Promise<Omit<WrittenRun, '_id'> | null> {
  return (await models.Run.collection.findOne({ _id: runId as never }, { projection: WRITTEN_RUN })) as Omit<WrittenRun, '_id'> | null;
}
