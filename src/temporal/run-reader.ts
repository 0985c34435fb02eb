import type { Client } from '@temporalio/client';
import type { RunState } from '../../workflows/types';

interface Entry {
  value: Promise<RunState | undefined>;
  /** When the answer arrived; undefined while the query is in flight. */
  doneAt?: number;
}

/**
 * Reads live runs with the workflow's `run` query. A query costs a workflow task on a worker, so concurrent polls
 * of one run share one query (single flight) and its answer is reused for `cacheMs` after it arrives (about a
 * client's poll interval). Resolves undefined when the workflow cannot answer (not started yet, history gone, no
 * worker): the caller then serves the run record, which follows every status change.
 */
export function createRunReader(temporal: Client, cacheMs: number) {
  const entries = new Map<string, Entry>();
  let queries = 0;

  return {
    read(workflowId: string): Promise<RunState | undefined> {
      const now = Date.now();
      const hit = entries.get(workflowId);
      if (hit && (hit.doneAt === undefined || now - hit.doneAt < cacheMs)) return hit.value;
      if (entries.size > 10_000) {
        for (const [id, e] of entries) if (e.doneAt !== undefined && now - e.doneAt >= cacheMs) entries.delete(id);
      }
      queries++;
      const entry: Entry = {
        value: temporal.workflow
          .getHandle(workflowId)
          .query<RunState>('run')
          .catch(() => undefined)
          .finally(() => {
            entry.doneAt = Date.now();
          }),
      };
      entries.set(workflowId, entry);
      return entry.value;
    },
    /** Queries sent so far (the benchmark reports queries per live run per second). */
    queryCount: () => queries,
  };
}

export type RunReader = ReturnType<typeof createRunReader>;
