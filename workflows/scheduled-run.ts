import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduledRunActivities } from '../activities/scheduled-run';
import { SCHEDULED_START_TIME, scheduledRunName, type ScheduledRunInput } from '../src/contract/messages';

/** Recording and starting the run: retried through an outage of Temporal or the database; past that the next action covers it. */
const START = { startToCloseTimeout: '1m', scheduleToCloseTimeout: '15m', retry: { initialInterval: '1s', maximumInterval: '30s' } } as const;
/**
 * Waiting for the run: one short look per attempt, each "still going" a retry (Temporal's polling pattern: no
 * activity slot held, no history written per look), looking less often the longer the run takes. The activity ends
 * the wait itself once the run is past its worker's time limits (activities/scheduled-run.ts).
 */
const AWAIT = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 1.5, maximumInterval: '15s' },
} as const;

/**
 * The action of a task's schedule: records and starts the run named by the action's scheduled time, and waits for
 * it to end, so the schedule's overlap policy (skip) covers the run. A task that is gone ends it quietly.
 */
export async function scheduledRun(input: ScheduledRunInput): Promise<{ run: string; status: string }> {
  const { startScheduledRun } = proxyActivities<ScheduledRunActivities>(START);
  const { awaitScheduledRun } = proxyActivities<ScheduledRunActivities>(AWAIT);
  const info = workflowInfo();
  // Started outside a schedule (by hand in the Web UI): its start time stands in.
  const at = info.typedSearchAttributes.get(SCHEDULED_START_TIME) ?? info.startTime;
  const run = scheduledRunName(input.schedule, at);
  const started = await startScheduledRun({ identity: { owner: input.owner, profile: input.profile, task: input.task, run }, payload: input.payload });
  if (!started) return { run, status: 'task gone' };
  return { run, status: await awaitScheduledRun({ runId: started.runId }) };
}
