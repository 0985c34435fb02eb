import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { findRun, runWorkflowId } from '../src/store/runs';
import { findTask } from '../src/store/tasks';
import type { Runs } from '../src/runs';
import { RateLimited } from '../src/errors';
import { isTerminal } from '../src/contract/constants';
import type { RunIdentity } from '../src/contract/types';
import type { ActivityDeps } from './deps';
import { SCHEDULE_FAILURE } from '../src/contract/failures';
import { liveRunLifetimeMs } from '../src/runs/trigger';


/** The steps of a schedule's action (workflows/scheduled-run.ts). */
export function createScheduledRunActivities(deps: Pick<ActivityDeps, 'db' | 'config' | 'logger'>, runs: Pick<Runs, 'trigger'>) {
  return {
    /**
     * Records and starts the run with the task as it is now (triggerRun: idempotent by run name), one priority step
     * behind the task's own (src/runs/priority.ts). Returns null, and starts nothing, when the task is gone.
     */
    async startScheduledRun(input: { identity: RunIdentity; payload: Record<string, unknown> }): Promise<{ runId: string } | null> {
      const { models } = deps.db;
      const { identity } = input;
      const task = await findTask(models, { owner: identity.owner, profile: identity.profile, name: identity.task });
      if (!task) {
        deps.logger.info({ ...identity }, 'scheduled run not started: its task is gone');
        return null;
      }
      try {
        await runs.trigger(task, identity.run, input.payload, 'schedule');
      } catch (err) {
        // LIVE_RUNS_PER_USER: the action waits for a place (its retry policy), looking again when the limit says.
        if (!(err instanceof RateLimited)) throw err;
        throw ApplicationFailure.create({ type: SCHEDULE_FAILURE.liveRunsLimit, message: err.message, category: ApplicationFailureCategory.BENIGN, nextRetryDelay: err.retryAfterSeconds * 1000 });
      }
      return { runId: runWorkflowId(identity) };
    },

    /**
     * One look at the run: its status once it is closed (`deleted` when its record is gone, e.g. with its task);
     * while it is not, a benign retryable failure, so Temporal looks again later (the workflow's retry policy). Gives
     * up on a run still open well past the worker's time limits, so a lost run never holds up its schedule.
     */
    async awaitScheduledRun(input: { runId: string }): Promise<string> {
      const record = await findRun(deps.db.models, input.runId);
      if (!record) return 'deleted';
      if (isTerminal(record.status)) return record.status;
      if (Date.now() > record.created_at.getTime() + liveRunLifetimeMs(deps.config)) {
        deps.logger.warn({ run: input.runId, status: record.status }, 'scheduled run still open past its time limit: its schedule no longer waits for it');
        return `${record.status} past its time limit`;
      }
      throw ApplicationFailure.create({ type: SCHEDULE_FAILURE.runStillOpen, message: `the run is ${record.status}`, category: ApplicationFailureCategory.BENIGN });
    },
  };
}

export type ScheduledRunActivities = ReturnType<typeof createScheduledRunActivities>;
