import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { runWorkflowId } from '../store/runs';
import type { TaskRef } from '../store/tasks';
import { releaseLiveRun } from '../store/live-runs';
import { deleteTaskData, deleteTaskDocument, liveRunsOfTask } from '../store/task-deletion';
import { deleteDeliveries } from '../store/webhooks';
import { deleteTaskSchedules } from './task-schedules';

export interface TaskDeletion {
  /** false when there was no such task (nothing else was touched). */
  deleted: boolean;
  cancelled: number;
  runsDeleted: number;
}

/**
 * Deletes a task for good: the task first (so no new trigger can find it), then its schedules, then it cancels the workflows of its
 * live runs, and deletes its versions, its runs and what they stored (pages, large texts). Signed URLs die with it because they carry the task's _id,
 * which a task later created under the same name does not share. A workflow that cannot be cancelled (Temporal
 * unreachable) is logged and left: its version is gone, so it fails at its next step instead of calling the
 * provider. A run that already finished makes `cancel` answer not-found, which is fine.
 */
export async function deleteTaskCascade(
  deps: { models: Models; temporal: Client; logger: Logger },
  ref: TaskRef,
): Promise<TaskDeletion> {
  const { models, temporal, logger } = deps;
  const taskId = await deleteTaskDocument(models, ref);
  if (!taskId) return { deleted: false, cancelled: 0, runsDeleted: 0 };
  // Before its runs are listed: a run its schedule starts meanwhile is then among the live ones cancelled.
  await deleteTaskSchedules({ models, temporal, logger }, { owner: ref.owner, profile: ref.profile, task: ref.name });

  const runFilter = { owner: ref.owner, profile: ref.profile, task: ref.name };
  const live = await liveRunsOfTask(models, runFilter);
  // Their records go below without a close: their places among the owner's live runs are given back here.
  await Promise.all(
    live.map((run) => releaseLiveRun(models, { runId: runWorkflowId({ ...runFilter, run: run.name }), owner: ref.owner, slot: run.live_slot })),
  ).catch((err: unknown) => logger.warn({ err, ...runFilter }, 'deleted task: its live runs\' places could not be given back (they expire)'));

  const outcomes = await Promise.allSettled(
    live.map((run) =>
      temporal.workflow
        .getHandle(runWorkflowId({ owner: ref.owner, profile: ref.profile, task: ref.name, run: run.name }))
        .cancel()
        .then(
          () => true,
          (err: unknown) => {
            if (err instanceof WorkflowNotFoundError) return false;
            throw err;
          },
        ),
    ),
  );
  const cancelled = outcomes.filter((o) => o.status === 'fulfilled' && o.value).length;
  const failed = outcomes.filter((o) => o.status === 'rejected');
  if (failed.length > 0) {
    logger.warn(
      { ...runFilter, failed: failed.length, reason: String((failed[0] as PromiseRejectedResult).reason) },
      'deleted task: some live runs could not be cancelled',
    );
  }

  const runsDeleted = await deleteTaskData(models, taskId, runFilter);
  await deleteDeliveries(models, taskId);
  logger.info({ ...runFilter, cancelled, runsDeleted }, 'task deleted');
  return { deleted: true, cancelled, runsDeleted };
}
