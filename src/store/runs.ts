import { badRequest } from '../errors';
import type { Models } from './models';
import { runWorkflowId, type RunIdentity } from '../temporal/ids';

export type RunRecord = NonNullable<Awaited<ReturnType<typeof findRun>>>;

export const identityFields = (id: RunIdentity) => ({ owner: id.owner, profile: id.profile, task: id.task, name: id.run });

/** By _id (= the workflow id): the one lookup FerretDB answers without scanning the collection. */
export function findRun(models: Models, id: RunIdentity) {
  return models.Run.findById(runWorkflowId(id)).lean();
}

/** Runs of a task, newest first, after `cursor` (as returned in `next`). Throws 400 for a cursor not issued here. */
export async function listRuns(models: Models, task: { owner: string; profile: string; task: string }, limit: number, cursor?: string) {
  const filter: Record<string, unknown> = { owner: task.owner, profile: task.profile, task: task.task };
  const after = cursor ? decodeCursor(cursor) : undefined;
  if (cursor && !after) throw badRequest('query.cursor: not a cursor issued by this list');
  if (after) {
    filter.$or = [{ created_at: { $lt: after.at } }, { created_at: after.at, _id: { $lt: after.id } }];
  }
  const docs = await models.Run.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).lean();
  const page = docs.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page, next: docs.length > limit && last ? encodeCursor(last.created_at, last._id) : null };
}

const encodeCursor = (at: Date, id: string) => Buffer.from(JSON.stringify([at.getTime(), id])).toString('base64url');

function decodeCursor(cursor: string): { at: Date; id: string } | undefined {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    return Number.isFinite(at) && typeof id === 'string' ? { at: new Date(at as number), id } : undefined;
  } catch {
    return undefined;
  }
}
