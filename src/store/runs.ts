import { keysetQuery, type PageRequest } from './keyset';
import type { Models } from './models';
import { runWorkflowId, type RunIdentity } from '../temporal/ids';

/** A run document as stored (the schema has no version key). */
export type RunRecord = Omit<NonNullable<Awaited<ReturnType<typeof findRun>>>, '__v'>;

export const identityFields = (id: RunIdentity) => ({ owner: id.owner, profile: id.profile, task: id.task, name: id.run });

/** By _id (= the workflow id): the one lookup FerretDB answers without scanning the collection. */
export function findRun(models: Models, id: RunIdentity) {
  return models.Run.findById(runWorkflowId(id)).lean();
}

/** Runs of a task, newest first (then by _id), a page after `page.cursor`. Throws 400 for a cursor not issued here. */
export async function listRuns(models: Models, task: { owner: string; profile: string; task: string }, page: PageRequest) {
  const q = keysetQuery({ owner: task.owner, profile: task.profile, task: task.task }, page, ['_id'], -1);
  return q.finish(await models.Run.find(q.where).sort(q.sort).limit(q.limit).lean());
}
