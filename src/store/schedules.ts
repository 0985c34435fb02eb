import { isDuplicateKey, retryWhileBusy } from './connect';
import type { Models } from './models';
import { shuffled } from './shuffled';

/**
 * Which schedules a task has, and how many it may have. Each schedule holds a place: a document of `task_schedules`
 * whose `_id` is `<owner>/<profile>/<task>:<slot>`, with `slot` in [0, limit), so no more than `limit` of them can
 * exist at once, on MongoDB as on FerretDB: the unique `_id` is the count, and no document is updated by two writers
 * (FerretDB updates a document as read-modify-write, which loses one of two concurrent changes). A task's places are
 * read by `_id` alone, never by a scan of every user's.
 *
 * Two PUTs of one new name at once may both take a place; each then keeps the name's lowest place and gives back a
 * higher one of its own, so the name ends with one place.
 */

/** The task whose schedules these are. */
export interface ScheduledTask {
  owner: string;
  profile: string;
  task: string;
}

/** Whether a schedule's name has a place: it had one already, it took one now, or all `limit` are held. */
export type SchedulePlace = 'held' | 'taken' | 'refused';

const taskKey = (t: ScheduledTask) => `${t.owner}/${t.profile}/${t.task}`;
const placeId = (t: ScheduledTask, slot: number) => `${taskKey(t)}:${slot}`;
const placeIds = (t: ScheduledTask, limit: number) => Array.from({ length: limit }, (_, slot) => placeId(t, slot));

type Place = { _id: string; name: string };

async function places(models: Models, t: ScheduledTask, limit: number): Promise<Array<{ slot: number; name: string }>> {
  const docs = await models.TaskSchedule.find({ _id: { $in: placeIds(t, limit) } }, { name: 1 }).lean<Place[]>();
  return docs.map((d) => ({ slot: Number(d._id.slice(d._id.lastIndexOf(':') + 1)), name: d.name })).sort((a, b) => a.slot - b.slot);
}

/** The names of the task's schedules that hold a place, in order, once each. */
export async function placedScheduleNames(models: Models, t: ScheduledTask, limit: number): Promise<string[]> {
  return [...new Set((await places(models, t, limit)).map((p) => p.name))].sort();
}

/** Gives `name` a place among the task's `limit`, unless it has one or all are held. */
export async function claimSchedulePlace(models: Models, t: ScheduledTask, name: string, limit: number): Promise<SchedulePlace> {
  const held = await places(models, t, limit);
  if (held.some((p) => p.name === name)) return 'held';
  const taken = new Set(held.map((p) => p.slot));
  const free = shuffled(Array.from({ length: limit }, (_, slot) => slot).filter((slot) => !taken.has(slot)));
  for (const slot of free) {
    try {
      await retryWhileBusy(() => models.TaskSchedule.collection.insertOne({ _id: placeId(t, slot) as never, name, at: new Date() }));
    } catch (err) {
      if (isDuplicateKey(err)) continue;
      throw err;
    }
    const lowest = (await places(models, t, limit)).find((p) => p.name === name);
    if (lowest && lowest.slot < slot) await releasePlace(models, placeId(t, slot), name);
    return 'taken';
  }
  return 'refused';
}

const releasePlace = (models: Models, id: string, name: string) => retryWhileBusy(() => models.TaskSchedule.collection.deleteOne({ _id: id as never, name }));

/** Gives back every place `name` holds (its schedule is gone, or was never made). */
export async function releaseSchedulePlace(models: Models, t: ScheduledTask, name: string, limit: number): Promise<void> {
  await retryWhileBusy(() => models.TaskSchedule.collection.deleteMany({ _id: { $in: placeIds(t, limit) as never[] }, name }));
}

/**
 * Gives back every place of the task (it is deleted), and its document of the form before places
 * (`_id` `<owner>/<profile>/<task>` with `names`), whose schedules Temporal's visibility lists.
 */
export async function releaseSchedulePlaces(models: Models, t: ScheduledTask, limit: number): Promise<void> {
  await retryWhileBusy(() => models.TaskSchedule.collection.deleteMany({ _id: { $in: [...placeIds(t, limit), taskKey(t)] as never[] } }));
}
