import type { RunIdentity } from '../contract/types';
import type { Models } from './models';
import { isDuplicateKey } from './connect';
import { decodeCursor, encodeCursor } from './keyset';

/** A run started as an MCP task: the handle a client holds, bound to its owner. */
export interface McpTaskRecord {
  taskId: string;
  run: RunIdentity;
  createdAt: Date;
}

type Stored = { _id: string; owner: string; profile: string; task: string; run: string; created_at: Date };
const toRecord = (d: Stored): McpTaskRecord => ({ taskId: d._id, run: { owner: d.owner, profile: d.profile, task: d.task, run: d.run }, createdAt: d.created_at });

/** Records the task handle of a run; a retried call (the same id) leaves the first record as it is. */
export async function saveMcpTask(models: Models, taskId: string, run: RunIdentity, at: Date): Promise<void> {
  try {
    await models.McpTask.create({ _id: taskId, owner: run.owner, profile: run.profile, task: run.task, run: run.run, created_at: at });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

/** The task of that id, when it is `owner`'s; null otherwise (another user's task is not told apart from none). */
export async function findMcpTask(models: Models, taskId: string, owner: string): Promise<McpTaskRecord | null> {
  const doc = await models.McpTask.findOne({ _id: taskId }).lean<Stored>();
  return doc && doc.owner === owner ? toRecord(doc) : null;
}

const isCursor = (v: unknown): v is [number, string] => Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string';

/** The owner's MCP tasks, newest first, `limit` a page; `next` is the cursor of the page after (null on the last). */
export async function listMcpTasks(models: Models, owner: string, limit: number, cursor?: string): Promise<{ items: McpTaskRecord[]; next: string | null }> {
  const where: Record<string, unknown> = { owner };
  if (cursor) {
    const [ms, id] = decodeCursor(cursor, isCursor);
    where.$or = [{ created_at: { $lt: new Date(ms) } }, { created_at: new Date(ms), _id: { $lt: id } }];
  }
  const docs = await models.McpTask.find(where).sort({ created_at: -1, _id: -1 }).limit(limit + 1).lean<Stored[]>();
  const page = docs.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(toRecord), next: docs.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : null };
}

/** Forgets the handles of deleted runs (a task handle whose run is gone is an unknown task). */
export async function deleteMcpTasks(models: Models, taskIds: string[]): Promise<void> {
  if (taskIds.length > 0) await models.McpTask.deleteMany({ _id: { $in: taskIds } });
}
