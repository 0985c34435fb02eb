import { retryWhileBusy } from './connect';
import type { Models } from './models';

/**
 * Runs waiting for a place among their owner's started runs (runs/admission.ts), one document each (`_id` the run's
 * _id). An owner's waiting runs of one priority share a `key`, searched by its index (on FerretDB too) in the index's
 * order, which is the order they were written: the next one to start is found without reading the others.
 */

/** What a waiting run's start needs, besides its record. */
export interface WaitingRun {
  _id: string;
  owner: string;
  origin: string;
  /** The task queue its trigger would have started it on. */
  queue: string;
  /** The owner's started places it waits for (its trigger's STARTED_RUNS_PER_USER). */
  limit: number;
  at: Date;
}

const waitingKey = (owner: string, priority: number) => `${owner}/${priority}`;

/** Notes a run as waiting for its start (a no-op when it is noted already). */
export async function addWaitingStart(models: Models, run: { runId: string; owner: string; priority: number; origin: string; queue: string; limit: number; at: Date }): Promise<void> {
  const doc = { owner: run.owner, key: waitingKey(run.owner, run.priority), origin: run.origin, queue: run.queue, limit: run.limit, at: run.at, lease: new Date(0) };
  await retryWhileBusy(() => models.WaitingStart.collection.updateOne({ _id: run.runId as never }, { $setOnInsert: doc }, { upsert: true }));
}

/**
 * Leases the next waiting run of `owner` at `priority` that no process holds (its lease past) for `leaseMs`: the
 * caller starts it, then forgets it (`dropWaitingStart`); a caller that stops before that leaves it to the next one
 * once the lease is past. null when there is none.
 */
export async function leaseWaitingStart(models: Models, owner: string, priority: number, leaseMs: number): Promise<WaitingRun | null> {
  const now = new Date();
  // No sort: the `key` index gives an owner's runs of a priority oldest first, and FerretDB reads only the first one.
  const doc = await models.WaitingStart.collection.findOneAndUpdate(
    { key: waitingKey(owner, priority), lease: { $lt: now } },
    { $set: { lease: new Date(now.getTime() + leaseMs) } },
    // No projection: FerretDB's findAndModify does not take one.
    { returnDocument: 'after' },
  );
  return doc as unknown as WaitingRun | null;
}

/** Gives a leased run back to the queue at once (its start did not happen: no place was free). */
export async function releaseWaitingLease(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.WaitingStart.collection.updateOne({ _id: runId as never }, { $set: { lease: new Date(0) } }));
}

/** Forgets a waiting run (started, closed or deleted). */
export async function dropWaitingStart(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.WaitingStart.collection.deleteOne({ _id: runId as never }));
}

/** Whether `owner` has a waiting run no process holds: one read by the `owner` index. */
export async function hasWaitingStart(models: Models, owner: string): Promise<boolean> {
  return (await models.WaitingStart.collection.findOne({ owner, lease: { $lt: new Date() } }, { projection: { _id: 1 } })) !== null;
}

/** Whether the run waits for its start. */
export async function isWaitingStart(models: Models, runId: string): Promise<boolean> {
  return (await models.WaitingStart.collection.countDocuments({ _id: runId as never }, { limit: 1 })) > 0;
}

/** Owners with waiting runs no process holds (the reconciler's pass: a scan of a collection that is empty when no one waits). */
export async function ownersWaiting(models: Models, limit: number): Promise<string[]> {
  const owners = await models.WaitingStart.collection.distinct('owner', { lease: { $lt: new Date() } });
  return (owners as string[]).slice(0, limit);
}
