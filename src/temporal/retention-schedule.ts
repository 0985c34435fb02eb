import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { retainRuns } from '../../workflows/retention';
import { retentionScheduleId } from './ids';

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
  if (config.RUN_RETENTION_DAYS === undefined) {
    await client.schedule
      .getHandle(scheduleId)
      .delete()
      .catch((err: unknown) => {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      });
    return;
  }
  const spec = { intervals: [{ every: config.RETENTION_INTERVAL_MS }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: retainRuns,
    workflowId: scheduleId,
    taskQueue,
    args: [{ retentionMs: Math.round(config.RUN_RETENTION_DAYS * DAY_MS) }] as [{ retentionMs: number }],
    // A pass that cannot run (no worker) is not worth keeping: the next one covers it.
    workflowExecutionTimeout: Math.max(60_000, config.RETENTION_INTERVAL_MS * 2),
  };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, config.RETENTION_INTERVAL_MS) } });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  }
}
