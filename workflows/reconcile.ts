import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { RECONCILE } from './limits';

/**
 * Started by a Schedule every RECONCILE_INTERVAL_MS (src/temporal/reconcile-schedule.ts): ends the records of runs
 * whose workflow closed without recording its end (terminated, timed out, failed), found through Temporal's
 * visibility, not by scanning the records. Returns how many it ended.
 */
export async function reconcileRuns(input: { taskQueue: string }): Promise<number> {
  return proxyActivities<Activities>(RECONCILE).reconcileClosedRuns(input);
}
