import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { RECONCILE } from './limits';

/**
 * Started by a Schedule every RECONCILE_INTERVAL_MS (src/temporal/reconcile-schedule.ts): ends the records of runs
 * whose workflow closed without recording its end (terminated, timed out, failed), found through Temporal's
 * visibility, not by scanning the records; and starts the runs whose start failed while Temporal did not answer.
 */
export async function reconcileRuns(input: { taskQueue: string }): Promise<{ ended: number; started: number }> {
  const { reconcileClosedRuns, startDeferredRuns } = proxyActivities<Activities>(RECONCILE);
  return { ended: await reconcileClosedRuns(input), started: await startDeferredRuns(input) };
}
