import { randomInt } from 'node:crypto';
import { isDuplicateKey, retryWhileBusy } from './connect';
import type { Models } from './models';
import { shuffled } from './shuffled';

/**
 * LIVE_RUNS_PER_USER. A user's live runs hold places: documents of `live_runs` whose `_id` is `<owner>:<slot>`, with
 * `slot` in [0, limit), so no more than `limit` of them can exist at once, on MongoDB as on FerretDB: the unique `_id`
 * is the count, and no document is updated by two writers. A trigger takes a free place by inserting it (a random
 * slot, tried a few times), and only an owner whose places are mostly taken has them listed: one insert by `_id`
 * per trigger in the common case, whatever the number of live runs (FerretDB scans for any filter without `_id`). The
 * run's record keeps its slot (`live_slot`), and its close gives the place back by `_id` (and run).
 *
 * A place older than any run can live (`staleMs`: a process stopped between taking it and recording the run, or a
 * close never seen) does not count; a trigger that needs it takes it over, and the reconciler deletes the rest
 * (`deleteStaleMarks`). Places taken before the limit was lowered stay until their runs end.
 */

/** A trigger's place among its owner's live runs, or none. */
export type Claim = { slot: number } | 'refused';

/** Random slots tried before the owner's places are listed. */
const PROBES = 3;
/** Free slots tried, once listed, before the trigger is refused (others took them meanwhile). */
const FREE_TRIES = 5;

export const placeId = (owner: string, slot: number) => `${owner}:${slot}`;
const slotOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

/** Takes a free place among `owner`'s live runs for `runId`, unless `limit` of them are taken. */
export const claimLiveRun = (models: Models, claim: PlaceClaim): Promise<Claim> => claimPlace(models.LiveRun, claim);

type PlaceClaim = { runId: string; owner: string; limit: number; staleMs: number };

/**
 * Takes a free place of a set of `limit` places per owner (`live_runs`, or `started_runs`: runs/admission.ts) for
 * `runId`, unless all are taken.
 */
export async function claimPlace(places: Models['LiveRun'] | Models['StartedRun'], claim: PlaceClaim): Promise<Claim> {
  const model = places as Models['LiveRun'];
  const { runId, owner, limit } = claim;
  const now = new Date();
  const take = async (slot: number): Promise<boolean> => {
    try {
      await retryWhileBusy(() => model.collection.insertOne({ _id: placeId(owner, slot) as never, owner, run: runId, at: now }));
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  };
  for (let i = 0; i < Math.min(PROBES, limit); i++) {
    const slot = randomInt(limit);
    if (await take(slot)) return { slot };
  }
  // Most places may be taken: list them (a scan on FerretDB, only for such an owner).
  const held = await model.find({ owner }, { _id: 1, at: 1 }).lean<Array<{ _id: string; at: Date }>>();
  const staleBefore = now.getTime() - claim.staleMs;
  if (held.filter((p) => p.at.getTime() > staleBefore).length >= limit) return 'refused';
  const taken = new Map(held.map((p) => [slotOf(p._id), p]));
  const free = Array.from({ length: limit }, (_, slot) => slot).filter((slot) => !taken.has(slot));
  // Stale places after the free ones: their runs ended long ago (or never started), so they can be taken over.
  const stale = [...taken].filter(([slot, p]) => slot < limit && p.at.getTime() <= staleBefore).map(([slot]) => slot);
  for (const slot of [...shuffled(free).slice(0, FREE_TRIES), ...stale.slice(0, FREE_TRIES)]) {
    // A stale place is deleted only as it was listed (not once another trigger has taken it over).
    const was = taken.get(slot);
    if (was) await retryWhileBusy(() => model.collection.deleteOne({ _id: placeId(owner, slot) as never, at: was.at }));
    if (await take(slot)) return { slot };
  }
  return 'refused';
}

/**
 * Gives back `runId`'s place (its run is closed, deleted, or was never recorded), however often it is called: one
 * delete by `_id` of the place while it is this run's (not once another run has taken it since). `slot` absent: the
 * run took none (the limit was off).
 */
export async function releaseLiveRun(models: Models, place: { runId: string; owner: string; slot?: number | null }): Promise<void> {
  const { runId, owner, slot } = place;
  if (typeof slot !== 'number') return;
  await retryWhileBusy(() => models.LiveRun.collection.deleteOne({ _id: placeId(owner, slot) as never, run: runId }));
}

/** Gives back whatever places `runId` holds, found by a scan (its record, which names its place, is gone). */
export async function releaseLiveRunsOf(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.LiveRun.collection.deleteMany({ run: runId }));
}

/** Deletes places older than `staleMs`, live and started ones (the reconciler's pass). Returns how many. */
export async function deleteStaleMarks(models: Models, staleMs: number): Promise<number> {
  const before = { at: { $lt: new Date(Date.now() - staleMs) } };
  const counts = await Promise.all([models.LiveRun.collection.deleteMany(before), models.StartedRun.collection.deleteMany(before)]);
  return counts.reduce((n, c) => n + c.deletedCount, 0);
}
