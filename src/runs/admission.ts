import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Models } from '../store/models';
import { claimPlace } from '../store/live-runs';
import { retryWhileBusy } from '../store/connect';
import { addWaitingStart, dropWaitingStart, hasWaitingStart, leaseWaitingStart, ownersWaiting, releaseWaitingLease } from '../store/waiting-starts';
import { TASK_PRIORITY, type RunOrigin } from './priority';

/**
 * STARTED_RUNS_PER_USER: how many of one owner's runs have a workflow in Temporal at once. A trigger past it records
 * the run (`pending`, its place among the owner's live runs taken as always) but starts no workflow: the run waits in
 * the store (`waiting_starts`) and starts as one of the owner's runs ends (`admitWaiting`, called by every close's
 * announcement, and by the reconciler's pass in case an announcing process stopped). So a flood of one owner queues
 * in our store, a cheap write per run, instead of in Temporal's persistence (on the dev server, one SQLite writer
 * all runs share): another owner's run starts at once and is not held up behind it (docs/fairness.md, "Admission").
 *
 * Started places are `started_runs` documents (store/live-runs.ts's places: `<owner>:<slot>`, slot < the limit, so
 * the unique `_id` is the count); a run gives its place back by its name when it closes. Waiting runs start in their
 * task's priority order, then about in the order they were triggered.
 */

type AdmissionDeps = { models: Models; temporal: Client; config: Config };

/** How long a process holds a waiting run it is starting: past it, another may start it (idempotent by workflow id). */
const LEASE_MS = 60_000;
/** Waiting runs one close starts at most (places freed meanwhile by others are filled by their own closes). */
const STARTS_PER_CALL = 16;

/**
 * A new run's admission: `started` when its owner has a free started place (it is now the run's) or admission is off;
 * `waits` when the run was noted to start later. `staleMs`: a place older than any run can live does not count.
 */
export async function admitNewRun(
  deps: Pick<AdmissionDeps, 'models' | 'config'>,
  run: { runId: string; owner: string; priority: number; origin: RunOrigin; at: Date; staleMs: number },
): Promise<'started' | 'waits'> {
  const limit = deps.config.STARTED_RUNS_PER_USER;
  if (limit === 0) return 'started';
  let full = fullOwners.get(deps.models);
  if (!full) fullOwners.set(deps.models, (full = new Map()));
  const refusedAt = full.get(run.owner);
  // Refused a moment ago: the owner's places are taken (a flood), and probing them again would only cost writes.
  if (refusedAt === undefined || Date.now() - refusedAt >= FULL_MEMO_MS) {
    const claim = await claimPlace(deps.models.StartedRun, { runId: run.runId, owner: run.owner, limit, staleMs: run.staleMs });
    if (claim !== 'refused') {
      full.delete(run.owner);
      return 'started';
    }
    full.set(run.owner, Date.now());
  }
  await addWaitingStart(deps.models, { ...run, queue: deps.config.TEMPORAL_TASK_QUEUE, limit });
  return 'waits';
}

/**
 * Owners whose started places a trigger of this process found all taken, and when (per database: per process, and per
 * test stack). A trigger within FULL_MEMO_MS of that waits without probing; the owner's next close starts it, and
 * `admitSoon` covers a close that came before it was noted.
 */
const fullOwners = new WeakMap<Models, Map<string, number>>();
const FULL_MEMO_MS = 500;
/** After a run was noted waiting, its owner's waiting runs are looked at again this much later (`admitSoon`). */
export const ADMIT_AGAIN_MS = 1_000;

/**
 * Runs `admit` for `owner` once, ADMIT_AGAIN_MS from now, however often it is asked meanwhile (per database): a run
 * noted waiting just after the owner's last runs closed (their closes found nothing waiting) starts then, not at the
 * reconciler's next pass.
 */
export function admitSoon(models: Models, owner: string, admit: () => Promise<unknown>): void {
  let due = dueOwners.get(models);
  if (!due) dueOwners.set(models, (due = new Set()));
  if (due.has(owner)) return;
  due.add(owner);
  const own = due;
  setTimeout(() => {
    own.delete(owner);
    void admit();
  }, ADMIT_AGAIN_MS).unref();
}
const dueOwners = new WeakMap<Models, Set<string>>();

/** Gives back the run's started place, if it holds one (its run closed or was deleted); however often it is called. */
export async function releaseStartedPlace(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.StartedRun.collection.deleteMany({ run: runId }));
}

/**
 * What starting a waiting run does (trigger.ts `startWaitingRun`): `started`, or `ended` (its task was deleted: the
 * run was ended, and its caller announces that), or `gone` (the run was closed, deleted or started meanwhile).
 */
export type StartWaiting = (run: { runId: string; origin: RunOrigin; queue: string }) => Promise<'started' | 'ended' | 'gone'>;

/**
 * Starts `owner`'s waiting runs while it has free started places, highest priority first; how many it started. A
 * run found closed or deleted meanwhile is forgotten. Throws when the store or Temporal fails (a leased run goes back
 * to the queue when its lease is past). Costs one indexed read when the owner has no waiting run.
 */
export async function admitWaiting(deps: AdmissionDeps, owner: string, staleMs: number, startWaiting: StartWaiting): Promise<number> {
  if (!(await hasWaitingStart(deps.models, owner))) return 0;
  let started = 0;
  for (let priority: number = TASK_PRIORITY.highest; priority <= TASK_PRIORITY.lowest && started < STARTS_PER_CALL; ) {
    const next = await leaseWaitingStart(deps.models, owner, priority, LEASE_MS);
    if (!next) {
      priority++;
      continue;
    }
    // The places its trigger counted (processes of one deployment share it; a test's may not).
    const claim = await claimPlace(deps.models.StartedRun, { runId: next._id, owner, limit: next.limit, staleMs });
    if (claim === 'refused') {
      await releaseWaitingLease(deps.models, next._id);
      break;
    }
    const outcome = await startWaiting({ runId: next._id, origin: next.origin as RunOrigin, queue: next.queue });
    if (outcome === 'started') started++;
    else await releaseStartedPlace(deps.models, next._id);
    await dropWaitingStart(deps.models, next._id);
  }
  return started;
}

/** The reconciler's pass: starts waiting runs of owners whose places were freed without a start (a process stopped). */
export async function admitAllWaiting(deps: AdmissionDeps, staleMs: number, startWaiting: StartWaiting, limit: number): Promise<number> {
  let started = 0;
  for (const owner of await ownersWaiting(deps.models, limit)) started += await admitWaiting(deps, owner, staleMs, startWaiting);
  return started;
}
