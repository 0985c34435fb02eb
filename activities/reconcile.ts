import { Context } from '@temporalio/activity';
import type { Runs } from '../src/runs';
import { clearDeferredStart, deferredStarts, findRun } from '../src/store/runs';
import { readServiceMark, writeServiceMark } from '../src/store/service-state';
import { findTask } from '../src/store/tasks';
import type { ClosedStatus } from '../src/runs/endings';
import { liveRunLifetimeMs } from '../src/runs/trigger';
import { deleteStaleMarks } from '../src/store/live-runs';
import { deleteExpiredCounts } from '../src/store/rate-limit-counts';
import { deleteStaleTexts } from '../src/store/run-text';
import { unavailableDependency } from '../src/dependencies';
import { WORKFLOW } from '../src/contract/messages';
import type { ActivityDeps } from './deps';

/** The first pass of a deployment looks this far back (Temporal keeps closed workflows for its retention). */
const FIRST_LOOKBACK_MS = 7 * 24 * 3600_000;
/** Visibility records a closure a little after it happens: each pass starts this far before the last one began. */
const VISIBILITY_LAG_MS = 60_000;
/** Deferred starts one pass takes on (the rest wait for the next pass). */
const DEFERRED_STARTS_PER_PASS = 500;

export function createReconcileActivities(deps: ActivityDeps, runs: Runs) {
  /** Starts one deferred run if its record still waits for a start (1), and forgets the deferral. */
  const startDeferred = async (runId: string): Promise<number> => {
    const { models } = deps.db;
    const record = await findRun(models, runId);
    let started = 0;
    if (record && !record.started && record.status === 'pending') {
      const task = await findTask(models, { owner: record.owner, profile: record.profile, name: record.task });
      // A task of the same name made after the run's was deleted is another task: the run is not started with it.
      if (task && task._id.equals(record.task_id)) {
        await runs.startFromRecord(record, task);
        started = 1;
      } else if ((await runs.recordOutsideEnd(record._id, 'the task was deleted before the run could start')).written) {
        await runs.announceClosed(record._id);
      }
    }
    await clearDeferredStart(models, runId);
    return started;
  };

  /** Ends a run whose start kept failing for its own reason (the reason is in the log), and forgets its deferral. */
  const giveUp = async (runId: string): Promise<void> => {
    const { models } = deps.db;
    const reason = `the run could not be started (its start kept failing for over ${Math.ceil(deps.config.RUN_TIMEOUT_MS / 60_000)} min)`;
    try {
      if ((await runs.recordOutsideEnd(runId, reason)).written) await runs.announceClosed(runId);
      await clearDeferredStart(models, runId);
      deps.logger.error({ run: runId }, 'reconciler gave up starting a deferred run and ended it');
    } catch (err) {
      deps.logger.warn({ run: runId, err }, 'reconciler could not end a deferred run it gave up on; it tries again next pass');
    }
  };

  return {
    /**
     * Ends the records of this task queue's runs whose workflow closed since the last pass without recording its end.
     * Asks Temporal's visibility for them (not the records); a run already ended is left alone. Returns how many it ended.
     */
    async reconcileClosedRuns(input: { taskQueue: string }): Promise<number> {
      const { models } = deps.db;
      const key = `reconcile/${input.taskQueue}`;
      const began = Date.now();
      const since = (await readServiceMark(models, key)) ?? new Date(began - FIRST_LOOKBACK_MS);
      const query = [
        `WorkflowType = ${quote(WORKFLOW.run)}`,
        `TaskQueue = ${quote(input.taskQueue)}`,
        `ExecutionStatus IN ('Terminated', 'TimedOut', 'Failed', 'Canceled')`,
        `CloseTime >= ${quote(since.toISOString())}`,
      ].join(' AND ');
      let ended = 0;
      for await (const workflow of deps.temporal.workflow.list({ query })) {
        Context.current().heartbeat();
        const closed = await runs.closeFromWorkflow(workflow.workflowId, workflow.status.name as ClosedStatus, workflow);
        if (closed) ended++;
        // Ended by another path (a read, a stream), which may not have started its webhook delivery: a no-op if it did.
        else await runs.announceClosed(workflow.workflowId);
      }
      await writeServiceMark(models, key, new Date(began - VISIBILITY_LAG_MS));
      if (ended) deps.logger.info({ taskQueue: input.taskQueue, ended }, 'reconciler ended runs whose workflow closed without their end');
      return ended;
    },

    /**
     * Starts the runs whose trigger recorded them but could not start their workflow (Temporal did not answer), so
     * every accepted run runs even if its caller never retries. Starting is idempotent by workflow id. Returns how many
     * it started.
     */
    async startDeferredRuns(input: { taskQueue: string }): Promise<number> {
      const { models } = deps.db;
      let started = 0;
      // Started on this worker's queue (config): the queue they were deferred from.
      for (const deferred of await deferredStarts(models, input.taskQueue, DEFERRED_STARTS_PER_PASS)) {
        Context.current().heartbeat();
        try {
          started += await startDeferred(deferred._id);
        } catch (err) {
          // Temporal or MongoDB still not answering: every start waits for the next pass.
          if (unavailableDependency(err)) throw err;
          // Anything else is this run's own problem, without holding up the rest: logged and tried again on the next
          // passes, until the run's time limit has passed since the first failure; then the run ends.
          deps.logger.warn({ run: deferred._id, err }, 'reconciler could not start a deferred run');
          if (Date.now() - deferred.at.getTime() >= deps.config.RUN_TIMEOUT_MS) await giveUp(deferred._id);
        }
      }
      if (started) deps.logger.info({ started }, 'reconciler started runs whose start had failed');
      // Closed runs whose announcement failed (webhook delivery, live-run count): announced again.
      const announced = await runs.retryDeferredAnnouncements(DEFERRED_STARTS_PER_PASS);
      if (announced) deps.logger.info({ announced }, 'reconciler announced closed runs whose announcement had failed');
      // Left-overs no live run needs: live-run marks older than any run lives, rate-limit counts of past minutes,
      // answers' texts so far no call writes any more and follows that ended.
      const swept = (await deleteStaleMarks(models, liveRunLifetimeMs(deps.config))) + (await deleteExpiredCounts(models)) + (await deleteStaleTexts(models));
      if (swept) deps.logger.debug({ swept }, 'reconciler deleted stale live-run marks, expired rate-limit counts, stale texts so far and ended follows');
      // Waiting runs whose owners have free started places (a closing process stopped before starting them).
      const admitted = await runs.admitAllWaiting(DEFERRED_STARTS_PER_PASS);
      if (admitted) deps.logger.info({ admitted }, 'reconciler started waiting runs');
      return started;
    },
  };
}

/** A string literal of Temporal's list filter. */
const quote = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
