import { Types } from 'mongoose';
import { badRequest } from '../errors';
import type { Models } from './models';
import type { RunIdentity } from '../temporal/ids';

export type RunRecord = NonNullable<Awaited<ReturnType<typeof findRun>>>;

export const identityFilter = (id: RunIdentity) => ({ owner: id.owner, profile: id.profile, task: id.task, name: id.run });

export function findRun(models: Models, id: RunIdentity) {
  return models.Run.findOne(identityFilter(id)).lean();
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

const encodeCursor = (at: Date, id: Types.ObjectId) => Buffer.from(`${at.getTime()}:${id.toHexString()}`).toString('base64url');

function decodeCursor(cursor: string): { at: Date; id: Types.ObjectId } | undefined {
  const m = /^(\d{1,15}):([0-9a-f]{24})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? { at: new Date(Number(m[1])), id: new Types.ObjectId(m[2]) } : undefined;
}
