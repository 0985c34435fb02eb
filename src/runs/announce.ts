import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { clearDeferredAnnouncement, deferredAnnouncements, findClosingState, noteDeferredAnnouncement } from '../store/announcements';
import type { WrittenRun } from '../store/runs';
import { releaseLiveRun, releaseLiveRunsOf } from '../store/live-runs';
import { dropWaitingStart } from '../store/waiting-starts';
import { admitAllWaiting, admitSoon, admitWaiting, releaseStartedPlace, type StartWaiting } from './admission';
import { liveRunLifetimeMs, startWaitingRun } from './trigger';
import { findWebhookTask } from '../store/webhooks';
import { createTtlCache } from '../ttl-cache';
import { isTerminal } from '../contract/constants';
import { WORKFLOW, type DeliverWebhookWorkflow } from '../contract/messages';

/**
 * Starting a closed run's completion webhook (docs/webhooks.md). Every place a run closes calls `announceRunClosed`:
 * the run's workflow (activities/run-activities.ts) and `closeRun`'s callers (reads, control, run-endings, the
 * reconciler). It never throws: a failure is logged, and the run's own close is never held back by it.
 */
export type AnnounceDeps = {
  models: Models;
  temporal: Client;
  logger: Logger;
  config: Config;
};

/**
 * The delivery's workflow id: the run's, and its record's creation time (a run deleted and triggered again under its
 * name gets a delivery of its own). Starting it twice starts one delivery.
 */
export const webhookDeliveryWorkflowId = (runId: string, createdAt: number) => `webhook/${runId}@${createdAt}`;

/**
 * How long a process reuses "this task has a webhook, or not". A webhook set (or removed) reaches runs closing in
 * another process within this bound; a run closing sooner is delivered as the task was.
 */
const WEBHOOK_LOOKUP_MS = 1_000;

/** One cache per database (per process, and per test stack). */
const lookups = new WeakMap<Models, ReturnType<typeof createTtlCache<boolean>>>();
function hasWebhook(models: Models, taskId: WrittenRun['task_id']): Promise<boolean> {
  let cache = lookups.get(models);
  if (!cache) lookups.set(models, (cache = createTtlCache<boolean>(WEBHOOK_LOOKUP_MS, { maxEntries: 10_000 })));
  return cache.get(String(taskId), async () => Boolean((await findWebhookTask(models, taskId))?.webhook));
}

/** Starts the delivery of a closed run; a no-op when it was started before. Throws when Temporal does not answer. */
export async function startWebhookDelivery(deps: Pick<AnnounceDeps, 'temporal' | 'config'>, run: { runId: string; createdAt: number }): Promise<void> {
  const { config } = deps;
  try {
    await deps.temporal.workflow.start<DeliverWebhookWorkflow>(WORKFLOW.webhook, {
      workflowId: webhookDeliveryWorkflowId(run.runId, run.createdAt),
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ runId: run.runId, createdAt: run.createdAt, retry: { initialMs: config.WEBHOOK_RETRY_INITIAL_MS, hours: config.WEBHOOK_RETRY_HOURS } }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * Call once a run is closed (its record `ready` or `error`): gives back its place among its owner's live runs and
 * started runs (starting the owner's next waiting runs: admission.ts), and starts its webhook delivery when its task
 * has a webhook. Costs a run read by `_id` (none when the caller gives the record it has just written: `known`), a
 * place delete by `_id`, with admission on a delete and a read by index, and a cached task read by `_id`; a start only
 * for tasks with a webhook and for waiting runs. Never throws: when it cannot finish, the run is noted for the reconciler
 * (`retryDeferredAnnouncements`), which tries again on its next pass. False when even that note could not be
 * written (the store does not answer): a caller that can retry (the workflow's own write) should.
 */
export async function announceRunClosed(deps: AnnounceDeps, runId: string, known?: ClosedRecord): Promise<boolean> {
  try {
    await announce(deps, runId, known);
    return true;
  } catch (err) {
    deps.logger.warn({ run: runId, err }, 'could not announce a closed run (webhook delivery, live-run count); the reconciler tries again');
    try {
      await noteDeferredAnnouncement(deps.models, runId);
      return true;
    } catch (lost) {
      deps.logger.error({ run: runId, err: lost }, 'could not note a closed run for the reconciler');
      return false;
    }
  }
}

/** What announcing needs of a closed run's record (`known`: the caller has just written the close and read it). */
type ClosedRecord = Omit<WrittenRun, '_id'>;

async function announce(deps: AnnounceDeps, runId: string, known?: ClosedRecord): Promise<void> {
  // Only what it needs of the record (not its first page of entries and messages).
  const record = known ?? (await findClosingState(deps.models, runId));
  if (record && !isTerminal(record.status)) return;
  // A run deleted since (retention, its task): its place, if it still holds one, is found by a scan (a rare path).
  if (!record) {
    await releaseStartedPlace(deps.models, runId);
    await dropWaitingStart(deps.models, runId);
    return releaseLiveRunsOf(deps.models, runId);
  }
  // Its place among its owner's live runs (store/live-runs.ts), given back however often this runs.
  await releaseLiveRun(deps.models, { runId, owner: record.owner, slot: record.live_slot });
  // Its place among its owner's started runs, and the owner's next waiting runs started in it (admission.ts).
  if (deps.config.STARTED_RUNS_PER_USER > 0) {
    await releaseStartedPlace(deps.models, runId);
    await admitWaiting(deps, record.owner, liveRunLifetimeMs(deps.config), startWaiting(deps));
  }
  if (!(await hasWebhook(deps.models, record.task_id))) return;
  await startWebhookDelivery(deps, { runId, createdAt: record.created_at.getTime() });
}

/** Starts a waiting run (trigger.ts); one ended instead (its task deleted) is announced as any close. */
const startWaiting =
  (deps: AnnounceDeps): StartWaiting =>
  async (run) => {
    const outcome = await startWaitingRun(deps, run);
    if (outcome === 'ended') await announceRunClosed(deps, run.runId);
    return outcome;
  };

/** Starts `owner`'s waiting runs in a moment, if it has free started places then (admission.ts `admitSoon`); never throws. */
export function admitWaitingSoon(deps: AnnounceDeps, owner: string): void {
  admitSoon(deps.models, owner, () =>
    admitWaiting(deps, owner, liveRunLifetimeMs(deps.config), startWaiting(deps)).catch((err: unknown) =>
      deps.logger.warn({ owner, err }, 'could not start waiting runs; the next close or the reconciler does'),
    ),
  );
}

/** The reconciler's pass: starts the waiting runs of owners with free started places (a closing process stopped first). */
export const admitAllWaitingRuns = (deps: AnnounceDeps, owners: number) => admitAllWaiting(deps, liveRunLifetimeMs(deps.config), startWaiting(deps), owners);

/** The reconciler's pass: announces the closes noted by `announceRunClosed` (up to `limit`). Returns how many it did. */
export async function retryDeferredAnnouncements(deps: AnnounceDeps, limit: number): Promise<number> {
  let done = 0;
  for (const runId of await deferredAnnouncements(deps.models, limit)) {
    try {
      await announce(deps, runId);
      await clearDeferredAnnouncement(deps.models, runId);
      done++;
    } catch (err) {
      deps.logger.warn({ run: runId, err }, 'reconciler could not announce a closed run yet');
    }
  }
  return done;
}
