import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Logger } from '../logger';
import { createTtlCache } from '../ttl-cache';

/** What a live run shows of its task queue when asked (`?include=queue`): Temporal's estimate, and when it was read. */
export interface QueueView {
  /** Tasks waiting in the run's task queue (workflow and activity tasks of every run there): Temporal's estimate. */
  backlog_estimate: number;
  /** When Temporal gave the estimate (ISO 8601); it is cached for QUEUE_STATS_CACHE_MS. */
  as_of: string;
}

const { TaskQueueType } = temporal.api.enums.v1;

/**
 * The backlog of a task queue from Temporal's task queue statistics (`DescribeTaskQueue` with `report_stats`: the
 * approximate backlog of its workflow tasks plus that of its activity tasks), read at most once per `ttlMs` per queue
 * by the process, however many clients ask. Temporal gives no run's place in the queue, so none is made up: the
 * figure is how much work waits ahead of the queue's next task, fairness and priority aside.
 * `get` answers undefined when Temporal does not answer (a run read never fails for it).
 */
export function createQueueStats(deps: { temporal: Client; namespace: string; logger: Logger }, ttlMs: number) {
  const cache = createTtlCache<QueueView>(ttlMs, { maxEntries: 100 });
  const backlogOf = async (taskQueue: string, taskQueueType: temporal.api.enums.v1.TaskQueueType) => {
    const res = await deps.temporal.workflowService.describeTaskQueue({ namespace: deps.namespace, taskQueue: { name: taskQueue }, taskQueueType, reportStats: true });
    return Number(res.stats?.approximateBacklogCount ?? 0);
  };
  const load = async (taskQueue: string): Promise<QueueView> => {
    const [workflows, activities] = await Promise.all([backlogOf(taskQueue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW), backlogOf(taskQueue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)]);
    return { backlog_estimate: workflows + activities, as_of: new Date().toISOString() };
  };
  return {
    async get(taskQueue: string): Promise<QueueView | undefined> {
      try {
        return await cache.get(taskQueue, () => load(taskQueue));
      } catch (err) {
        deps.logger.debug({ err: (err as Error).message, taskQueue }, 'task queue statistics not read');
        return undefined;
      }
    },
  };
}

export type QueueStats = ReturnType<typeof createQueueStats>;
