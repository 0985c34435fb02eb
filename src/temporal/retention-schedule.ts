import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import { WORKFLOW, type RetainRunsWorkflow } from '../contract/messages';
import { retentionScheduleId } from './ids';
import { ensureSchedule, removeSchedule } from './schedules';

const DAY_MS = 24 * 3600_000;

/**
 * The retention Schedule on Temporal (one per task queue, in the Web UI's Schedules): every RETENTION_INTERVAL_MS it
 * starts `retainRuns` on the workers' queue, one at a time, with RUN_RETENTION_DAYS as its argument. Every worker
 * makes sure of it at start: it exists, with the current settings, exactly while RUN_RETENTION_DAYS is set.
 */
export async function ensureRetentionSchedule(
  client: Client,
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'RUN_RETENTION_DAYS' | 'RETENTION_INTERVAL_MS'>,
): Promise<void> {
  const taskQueue = config.TEMPORAL_TASK_QUEUE;
  const scheduleId = retentionScheduleId(taskQueue);
  if (config.RUN_RETENTION_DAYS === undefined) return removeSchedule(client, scheduleId);
  const args: Parameters<RetainRunsWorkflow> = [{ retentionMs: Math.round(config.RUN_RETENTION_DAYS * DAY_MS) }];
  await ensureSchedule<RetainRunsWorkflow>(client, { scheduleId, workflowType: WORKFLOW.retain, taskQueue, args, everyMs: config.RETENTION_INTERVAL_MS });
}
