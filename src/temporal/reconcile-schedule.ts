import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { reconcileRuns } from '../../workflows/reconcile';
import { reconcileScheduleId } from './ids';

/**
 * The reconciler's Schedule on Temporal (one per task queue, shown in the Web UI's Schedules): every
 * RECONCILE_INTERVAL_MS it starts `reconcileRuns` on the workers' queue, one at a time. Every worker makes sure it
 * exists at start and brings its interval up to date; creating it twice is harmless.
 */
export async function ensureReconcileSchedule(client: Client, config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'RECONCILE_INTERVAL_MS'>): Promise<void> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  const scheduleId = reconcileScheduleId(taskQueue);
  const spec = { intervals: [{ every: config.RECONCILE_INTERVAL_MS }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: reconcileRuns,
    workflowId: scheduleId,
    taskQueue,
    args: [{ taskQueue }] as [{ taskQueue: string }],
    // A pass that cannot run (no worker) is not worth keeping: the next one covers it.
    workflowExecutionTimeout: Math.max(60_000, config.RECONCILE_INTERVAL_MS * 2),
  };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, config.RECONCILE_INTERVAL_MS) } });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  }
}
