import type { Priority } from '@temporalio/common';
import type { Models } from '../store/models';
import { FAIRNESS_WEIGHT, readFairnessWeight } from '../store/user-weights';
import { createTtlCache } from '../ttl-cache';

/** A task's `settings.priority`: Temporal's priority keys with its default range (matching.priorityLevels, 5). */
export const TASK_PRIORITY = { highest: 1, lowest: 5, default: 3 } as const;

/**
 * What started a run: a trigger (HTTP, signed URL, MCP, a schedule's "run now") or a schedule's action, which a
 * person is not waiting on and so goes one step behind the task's own priority; a replay (or an eval's) goes at
 * TASK_PRIORITY.lowest, behind every run of the task's own.
 */
export type RunOrigin = 'trigger' | 'schedule' | 'replay';

/**
 * The run's workflow priority (inherited by its activities): the owner is the fairness key, so one owner's backlog
 * cannot hold up everyone else's runs; the task's priority (schedules one lower) orders runs before fairness does.
 */
export function runPriority(run: { owner: string; weight: number; taskPriority?: number | null; origin: RunOrigin }): Priority {
  const own = run.taskPriority ?? TASK_PRIORITY.default;
  const priorityKey = run.origin === 'replay' ? TASK_PRIORITY.lowest : run.origin === 'schedule' ? Math.min(own + 1, TASK_PRIORITY.lowest) : own;
  return { priorityKey, fairnessKey: run.owner, fairnessWeight: run.weight };
}

/** One cache of owners' weights per database connection (the API's and the worker's). */
const weightCaches = new WeakMap<Models, ReturnType<typeof createTtlCache<number>>>();

/**
 * The owner's fairness weight, read at most once per `ttlMs` (TRIGGER_CACHE_MS) per owner in a process, so a burst of
 * triggers costs one read: a change made with `npm run users -- set-weight` reaches runs started `ttlMs` later. A
 * failed read gives the default weight: a run's start does not wait on its share of the queue.
 */
export async function ownerWeight(models: Models, owner: string, ttlMs: number): Promise<number> {
  let cache = weightCaches.get(models);
  if (!cache) weightCaches.set(models, (cache = createTtlCache<number>(ttlMs, { refreshAhead: true })));
  return cache.get(owner, () => readFairnessWeight(models, owner)).catch(() => FAIRNESS_WEIGHT.default);
}
