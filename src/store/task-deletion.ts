import type { Types } from 'mongoose';
import type { Models } from './models';
import { deleteRunContent } from './run-content';
import { deleteMcpTasksOfTask } from './mcp-tasks';
import type { TaskRef } from './tasks';

/**
 * What deleting a task removes from the store (temporal/task-cascade.ts orders the steps around Temporal's): the task,
 * its versions, its runs and what they stored.
 */

/** Run statuses whose workflow may still be executing. */
export const LIVE_RUN_STATUSES = ['pending', 'running'] as const;

/** A run of the task, as the cascade needs it. */
export interface TaskRunRef {
  owner: string;
  profile: string;
  task: string;
}

/** Deletes the task's own document; its `_id`, or null when there was no such task. (No projection: FerretDB's findAndModify refuses one.) */
export async function deleteTaskDocument(models: Models, ref: TaskRef): Promise<Types.ObjectId | null> {
  const task = await models.Task.findOneAndDelete({ owner: ref.owner, profile: ref.profile, name: ref.name }).lean<{ _id: Types.ObjectId }>();
  return task?._id ?? null;
}

/** The task's runs whose workflow may still be executing: their names and places among the owner's live runs. */
export function liveRunsOfTask(models: Models, runs: TaskRunRef): Promise<Array<{ name: string; live_slot?: number }>> {
  return models.Run.find({ ...runs, status: { $in: LIVE_RUN_STATUSES } }, { name: 1, live_slot: 1 }).lean<Array<{ name: string; live_slot?: number }>>().exec();
}

/**
 * Deletes the task's evals (first: an eval still running then finds itself gone and makes no more replays), its
 * versions, then its runs, their MCP task handles and what they stored (pages, large texts). Returns the runs deleted.
 */
export async function deleteTaskData(models: Models, taskId: Types.ObjectId, runs: TaskRunRef): Promise<number> {
  await models.Eval.deleteMany(runs);
  await models.TaskVersion.deleteMany({ task_id: taskId });
  await deleteMcpTasksOfTask(models, runs);
  const ids = (await models.Run.find(runs, { _id: 1 }).lean<Array<{ _id: string }>>()).map((r) => r._id);
  await deleteRunContent(models, ids);
  return (await models.Run.deleteMany(runs)).deletedCount;
}
