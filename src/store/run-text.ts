import { retryWhileBusy } from './connect';
import type { Models, RunTextDoc } from './models';

/**
 * The text of a live run's answer as it is written (issue 32): the worker writes it only while the run is followed,
 * the run's event streams read it and send `delta` events, and the record write after the answer deletes it (the
 * stored message replaces it). It never enters Temporal history.
 */

export type RunText = Pick<RunTextDoc, 'call' | 'text' | 'seq' | 'at'>;

/** Upserts the text so far of `runId`'s provider call `call` (activity id + attempt); `seq` grows with each write. */
export async function writeRunText(models: Models, runId: string, update: { call: string; text: string }): Promise<void> {
  await retryWhileBusy(() =>
    models.RunText.collection.updateOne(
      { _id: runId as never },
      { $set: { call: update.call, text: update.text, at: new Date() }, $inc: { seq: 1 } },
      { upsert: true },
    ),
  );
}

/** The text document of `runId`, or null when none is written (not followed, or the answer is stored). */
export async function readRunText(models: Models, runId: string): Promise<RunText | null> {
  return models.RunText.findById(runId, { call: 1, text: 1, seq: 1, at: 1 }).lean<RunText>();
}

export async function clearRunText(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.RunText.collection.deleteOne({ _id: runId as never }));
}

/** `runId` is followed until `untilMs` (the API renews it while a stream of the live run is open). */
export async function markFollowed(models: Models, runId: string, untilMs: number): Promise<void> {
  await retryWhileBusy(() =>
    models.RunFollow.collection.updateOne({ _id: runId as never }, { $set: { until: new Date(untilMs) } }, { upsert: true }),
  );
}

/** The text documents of `runIds` (those that have one), by run id: one query, whatever the number of runs. */
export async function readRunTexts(models: Models, runIds: string[]): Promise<Map<string, RunText>> {
  if (runIds.length === 0) return new Map();
  const found = await models.RunText.find({ _id: { $in: runIds } }, { call: 1, text: 1, seq: 1, at: 1 }).lean<Array<RunText & { _id: string }>>();
  return new Map(found.map(({ _id, ...text }) => [_id, text]));
}

/** `runIds` are followed until `untilMs`: one command (upserts), whatever the number of runs. */
export async function markFollowedMany(models: Models, runIds: string[], untilMs: number): Promise<void> {
  if (runIds.length === 0) return;
  const until = new Date(untilMs);
  await retryWhileBusy(() =>
    models.RunFollow.collection.bulkWrite(
      runIds.map((id) => ({ updateOne: { filter: { _id: id as never }, update: { $set: { until } }, upsert: true } })),
      { ordered: false },
    ),
  );
}

/** The ids of the runs followed at `now`: one query (the worker polls it into a set). */
export async function followedRuns(models: Models, now: Date): Promise<string[]> {
  const follows = await models.RunFollow.find({ until: { $gt: now } }, { _id: 1 }).lean<Array<{ _id: string }>>();
  return follows.map((f) => f._id);
}

/** A text not written for this long is no call's any more (its call ended, or stalled without a word since). */
export const STALE_TEXT_MS = 10 * 60_000;
/** A follow ended this long ago is no API process's any more (each renews its own every ~10 s). */
const ENDED_FOLLOW_MS = 60_000;

/**
 * Deletes what no live call or follower needs: texts not written for STALE_TEXT_MS (their answer stored while no one
 * followed any more, a worker lost mid-call) and follows that ended, so the worker's once-a-second read stays small.
 * Returns how many it deleted (the reconciler's pass calls it).
 */
export async function deleteStaleTexts(models: Models, now = Date.now()): Promise<number> {
  const [texts, follows] = await Promise.all([
    retryWhileBusy(() => models.RunText.collection.deleteMany({ at: { $lt: new Date(now - STALE_TEXT_MS) } })),
    retryWhileBusy(() => models.RunFollow.collection.deleteMany({ until: { $lt: new Date(now - ENDED_FOLLOW_MS) } })),
  ]);
  return texts.deletedCount + follows.deletedCount;
}
