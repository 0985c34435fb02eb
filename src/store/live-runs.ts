import { isDuplicateKey, retryWhileBusy } from './connect';
import type { Models } from './models';

/**
 * LIVE_RUNS_PER_USER. The marks are the count: one document per live run in `live_runs` (`_id` = the run id, `owner`,
 * `at`). A trigger marks its run first, then counts its owner's marks; over the limit, it takes its mark back and
 * refuses. Two triggers at the same instant may both count the other's mark and both refuse, so a burst never lets
 * more through than the limit, on MongoDB as on FerretDB (no document is updated by two writers, so no write is lost).
 * A run's close deletes its mark, by `_id`, however often the close is seen.
 *
 * Counting reads the owner's marks (an index on `owner` on MongoDB; FerretDB scans the collection, which holds only
 * live runs). A mark older than any run can live (`staleMs`: a process stopped between marking and recording, or a
 * close never seen) is not counted, and the reconciler deletes it (`deleteStaleMarks`).
 */

/** What a trigger's claim found: a new place, the run's own place already held (the run is live), or no place. */
export type Claim = 'claimed' | 'held' | 'refused';

/** Marks `runId` as one of `owner`'s live runs, unless that makes more than `limit` of them. */
export async function claimLiveRun(models: Models, claim: { runId: string; owner: string; limit: number; staleMs: number }): Promise<Claim> {
  const { LiveRun } = models;
  const now = new Date();
  try {
    await retryWhileBusy(() => LiveRun.collection.insertOne({ _id: claim.runId as never, owner: claim.owner, at: now }));
  } catch (err) {
    if (isDuplicateKey(err)) return 'held';
    throw err;
  }
  const live = await LiveRun.countDocuments({ owner: claim.owner, at: { $gt: new Date(now.getTime() - claim.staleMs) } });
  if (live <= claim.limit) return 'claimed';
  await releaseLiveRun(models, claim.runId);
  return 'refused';
}

/** The run is closed, deleted, or was never recorded: its place is given back (a no-op when it held none). */
export async function releaseLiveRun(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.LiveRun.collection.deleteOne({ _id: runId as never }));
}

/** Gives back the places of many runs at once (a deleted task's live runs). */
export async function releaseLiveRuns(models: Models, runIds: string[]): Promise<void> {
  if (runIds.length > 0) await retryWhileBusy(() => models.LiveRun.collection.deleteMany({ _id: { $in: runIds as never[] } }));
}

/** Deletes marks older than `staleMs` (the reconciler's pass). Returns how many. */
export async function deleteStaleMarks(models: Models, staleMs: number): Promise<number> {
  const { deletedCount } = await models.LiveRun.collection.deleteMany({ at: { $lt: new Date(Date.now() - staleMs) } });
  return deletedCount;
}
