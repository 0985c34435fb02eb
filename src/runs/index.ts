import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import type { RunRecord, RunToDelete } from '../store/runs';
import type { HeldEntry, RunRef } from '../contract/types';
import { admitAllWaitingRuns, announceRunClosed, retryDeferredAnnouncements } from './announce';
import { deleteClosedRuns } from './delete';
import { closeAndAnnounce, closeFromWorkflow, type ClosedStatus } from './endings';
import type { ExecutionFacts } from './executions';
import { recordOutsideEnd, recordProgress } from './recorder';
import type { RunProgress } from '../store/runs';
import { healLostStart, startFromRecord, triggerRun, type TaskForRun } from './trigger';
import type { RunOrigin } from './priority';

/** What the run's lifecycle is built from: the API's and the worker's real clients (or the tests', the same). */
export interface RunDeps {
  models: Models;
  temporal: Client;
  logger: Logger;
  config: Config;
}

/**
 * The run's lifecycle, built once from its dependencies by each process (the API in createApp, the worker in
 * createActivities): trigger a run (record and start it), write it (the recorder), end it from outside and announce
 * its close, delete it. Every write of a run record goes through the recorder (recorder.ts), whoever calls.
 */
export function createRuns(deps: RunDeps) {
  const { models } = deps;
  return {
    deps,
    /** Records and starts a run, at most once per name (trigger.ts). */
    trigger: (task: TaskForRun, run: string, payload: Record<string, unknown>, origin?: RunOrigin) => triggerRun(deps, task, run, payload, origin),
    /** Starts the record's workflow; a no-op when it runs or has run. */
    startFromRecord: (record: RunRecord, task: TaskForRun, payload?: Record<string, unknown>) => startFromRecord(deps, record, task, payload),
    /** Starts a run whose start was lost (a read heals it). */
    healLostStart: (record: RunRecord, loadTask: () => Promise<TaskForRun | null>) => healLostStart(deps, record, loadTask),
    /** The recorder's write of a run by its workflow or activities (recorder.ts). */
    record: (run: RunRef, progress: RunProgress) => recordProgress(models, run, progress),
    /** The recorder's end of a run from outside its workflow (recorder.ts); announcing is the caller's (or `close`'s). */
    recordOutsideEnd: (runId: string, reason: string, known?: readonly HeldEntry[], knownFrom?: number) => recordOutsideEnd(models, runId, reason, known, knownFrom),
    /** Ends a run no workflow will end, and announces it (endings.ts). */
    close: (runId: string, reason: string, known?: readonly HeldEntry[]) => closeAndAnnounce(deps, runId, reason, known),
    /** Ends the run of a workflow that closed without writing its end, and announces it (endings.ts). */
    closeFromWorkflow: (runId: string, status: ClosedStatus, execution?: ExecutionFacts & { running?: boolean; runId?: string }, known?: readonly HeldEntry[]) =>
      closeFromWorkflow(deps, runId, status, execution, known),
    /** Announces a closed run: its live-run place back, its webhook started (announce.ts). Never throws. */
    announceClosed: (runId: string, known?: Parameters<typeof announceRunClosed>[2]) => announceRunClosed(deps, runId, known),
    /** The reconciler's pass over waiting runs whose owners have free started places (admission.ts); how many it started. */
    admitAllWaiting: (owners: number) => admitAllWaitingRuns(deps, owners),
    /** The reconciler's pass over announcements that failed. */
    retryDeferredAnnouncements: (limit: number) => retryDeferredAnnouncements(deps, limit),
    /** Deletes closed runs for good (delete.ts). */
    deleteClosed: (runs: RunToDelete[], options?: { modifiedBefore?: Date }) => deleteClosedRuns(deps, runs, options),
  };
}

export type Runs = ReturnType<typeof createRuns>;
