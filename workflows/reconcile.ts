import { proxyActivities } from '@temporalio/workflow';
import type { ReconcileActivities } from '../activities/reconcile';
import { RECONCILE } from './limits';

/**
 * Started by a Schedule every RECONCILE_INTERVAL_MS (src/temporal/reconcile-schedule.ts): ends the records of runs
 * whose workflow closed without recording its end (terminated, timed out, failed), found through Temporal's
 * visibility, not by scanning the records; and starts the runs whose start failed while Temporal did not answer.
 */
export async function reconcileRuns(input: { taskQueue: string }): Promise<{ ended: number; started: number }> {
  const { reconcileClosedRuns, startDeferredRuns } = proxyActivities<ReconcileActivities>(RECONCILE);
  // Each independent of the other: a visibility outage does not hold up the deferred starts, nor the reverse.
  const [ended, started] = await Promise.allSettled([reconcileClosedRuns(input), startDeferredRuns(input)]);
  if (ended.status === 'rejected') throw ended.reason;
  if (started.status === 'rejected') throw started.reason;
  return { ended: ended.value, started: started.value };
}
