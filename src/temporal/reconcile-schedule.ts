import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import { WORKFLOW, type ReconcileRunsWorkflow } from '../contract/messages';
import { reconcileScheduleId } from './ids';
import { ensureSchedule } from './schedules';

/**
 * The reconciler's Schedule on Temporal (one per task queue, shown in the Web UI's Schedules): every
 * RECONCILE_INTERVAL_MS it starts `reconcileRuns` on the workers' queue, one at a time. Every worker makes sure it
 * exists at start and brings its interval up to date.
 */
export async function ensureReconcileSchedule(client: Client, config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'RECONCILE_INTERVAL_MS'>): Promise<void> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  await ensureSchedule<ReconcileRunsWorkflow>(client, { scheduleId: reconcileScheduleId(taskQueue), workflowType: WORKFLOW.reconcile, taskQueue, args: [{ taskQueue }], everyMs: config.RECONCILE_INTERVAL_MS });
}
