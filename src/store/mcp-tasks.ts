import crypto from 'node:crypto';
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

/**
 * The MCP task id of a run (its handle's `_id`): a MAC with SIGNING_SECRET of the owner and the run's workflow id, so
 * it cannot be guessed, the same run (a retried call) always gets the same id, and whoever deletes a run can name
 * its handle without looking for it (FerretDB finds a document by `_id` without a scan).
 */
export const mcpTaskId = (secret: string, owner: string, runId: string) => crypto.createHmac('sha256', secret).update(['mcp-task', owner, runId].join('\n')).digest('base64url');

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

/**
 * Deletes the handles of runs being deleted (`_id`: the run's workflow id), whether they were started through MCP or
 * not (a run that was not has no handle: nothing to delete). A handle whose run is gone is an unknown task, and must
 * not come to name a later run of the same name.
 */
export async function deleteMcpTasksOfRuns(models: Models, secret: string, runs: ReadonlyArray<{ _id: string; owner: string }>): Promise<void> {
  if (runs.length > 0) await models.McpTask.deleteMany({ _id: { $in: runs.map((r) => mcpTaskId(secret, r.owner, r._id)) } });
}

/** Deletes the handles of a deleted task's runs (FerretDB scans `mcp_tasks` for this filter: a task's deletion only). */
export async function deleteMcpTasksOfTask(models: Models, task: { owner: string; profile: string; task: string }): Promise<void> {
  await models.McpTask.deleteMany({ owner: task.owner, profile: task.profile, task: task.task });
}
