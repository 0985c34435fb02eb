import { isDuplicateKey, retryWhileBusy } from './connect';
import type { Models } from './models';

/**
 * LIVE_RUNS_PER_USER: how many runs a user has `pending` or `running`. Two small collections, both read and written
 * by `_id` only: `live_run_counts` (`_id` = owner, `count`) and `live_runs` (`_id` = the run id, `owner`), one marker
 * per live run. A trigger claims a place (the count, raised only while under the limit, in one update) and marks its
 * run once the run is recorded; the run's close deletes the marker and, only when that delete found it, lowers the
 * count. So a close seen twice (an activity retried, a read and the reconciler) lowers it once.
 *
 * Exact on MongoDB. FerretDB applies updates as read-modify-write: two triggers of one user at the same instant may
 * both read the same count, letting one more run through. A count that drifted above the markers (a process
 * stopped between claiming and marking) is set back to the number of markers when it reaches the limit.
 */

/** How often one process may count a user's markers when the count says the user is at the limit. */
const RECOUNT_EVERY_MS = 10_000;
const recountedAt = new Map<string, number>();

const counts = (models: Models) => models.Run.db.db!.collection<{ _id: string; count: number }>('live_run_counts');
const markers = (models: Models) => models.Run.db.db!.collection<{ _id: string; owner: string; at: Date }>('live_runs');

/** Raises the owner's count by one while it is under `limit`; false when it is not (nothing changed). */
export async function claimLiveRun(models: Models, owner: string, limit: number): Promise<boolean> {
  if (await raise(models, owner, limit)) return true;
  // At the limit: a count raised by a claim whose run was never marked would hold a place for ever. Set it to the
  // markers' number (a scan of the live runs' markers, at most once per RECOUNT_EVERY_MS per owner), then try again.
  const last = recountedAt.get(owner) ?? 0;
  if (Date.now() - last < RECOUNT_EVERY_MS) return false;
  recountedAt.set(owner, Date.now());
  if (recountedAt.size > 10_000) recountedAt.delete(recountedAt.keys().next().value!);
  const marked = await markers(models).countDocuments({ owner });
  await counts(models).updateOne({ _id: owner }, { $set: { count: marked } });
  return raise(models, owner, limit);
}

async function raise(models: Models, owner: string, limit: number): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      // Upserts the owner's first count; when the count is at the limit the filter finds nothing and the upsert's
      // insert collides with the existing `_id`.
      await retryWhileBusy(() => counts(models).updateOne({ _id: owner, count: { $lt: limit } }, { $inc: { count: 1 } }, { upsert: true }));
      return true;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    // A collision also happens when two first claims of the owner upsert at once: only a count at the limit refuses.
    const current = await counts(models).findOne({ _id: owner });
    if ((current && current.count >= limit) || attempt === 5) return false;
  }
}

/** Gives back a claim that made no run (the name was used before, or the insert failed). */
export async function unclaimLiveRun(models: Models, owner: string): Promise<void> {
  await retryWhileBusy(() => counts(models).updateOne({ _id: owner }, { $inc: { count: -1 } }));
}

/** Marks a recorded run as holding its owner's claim. */
export async function markLiveRun(models: Models, runId: string, owner: string): Promise<void> {
  try {
    await retryWhileBusy(() => markers(models).insertOne({ _id: runId, owner, at: new Date() }));
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

/** The run is closed (or deleted): its claim is given back, once however often this is called. */
export async function releaseLiveRun(models: Models, runId: string, owner: string): Promise<void> {
  const { deletedCount } = await retryWhileBusy(() => markers(models).deleteOne({ _id: runId }));
  if (deletedCount === 1) await retryWhileBusy(() => counts(models).updateOne({ _id: owner, count: { $gt: 0 } }, { $inc: { count: -1 } }));
}
