import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Activities } from '../activities';

/** What a task's schedule starts: the run's task and trigger data (src/temporal/task-schedules.ts makes it). */
export interface ScheduledRunInput {
  owner: string;
  profile: string;
  task: string;
  schedule: string;
  payload: Record<string, unknown>;
}

/** Set by Temporal on the workflows a schedule starts: the action's scheduled time. */
export const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * A scheduled run's name: `<schedule>-<time as 20261123T083000Z>`. The same time gives the same name, so a retried
 * action (or a manual trigger in the same second) never makes a second run.
 */
export const scheduledRunName = (schedule: string, at: Date) => `${schedule}-${at.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;

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
  const { startScheduledRun } = proxyActivities<Activities>(START);
  const { awaitScheduledRun } = proxyActivities<Activities>(AWAIT);
  const info = workflowInfo();
  // Started outside a schedule (by hand in the Web UI): its start time stands in.
  const at = info.typedSearchAttributes.get(SCHEDULED_START_TIME) ?? info.startTime;
  const run = scheduledRunName(input.schedule, at);
  const started = await startScheduledRun({ identity: { owner: input.owner, profile: input.profile, task: input.task, run }, payload: input.payload });
  if (!started) return { run, status: 'task gone' };
  return { run, status: await awaitScheduledRun({ runId: started.runId }) };
}
