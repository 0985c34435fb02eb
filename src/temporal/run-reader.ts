import type { Client } from '@temporalio/client';
import type { RunState } from '../../workflows/types';

interface Entry {
  /** The query in flight, if any. */
  inflight?: Promise<RunState | undefined>;
  /** The last answer and when it arrived. */
  last?: { state: RunState | undefined; at: number };
}

/**
 * Reads live runs with the workflow's `run` query. A query costs a workflow task on a worker, so every poll of a run
 * shares one query at a time, and an answer younger than `cacheMs` (about a client's poll interval) is reused. An
 * older answer is still returned at once while one refresh runs (stale-while-revalidate): only a run's first poll
 * waits for Temporal, and a poll sees the run as of at most `cacheMs` plus one query ago. Resolves undefined when
 * the workflow cannot answer (not started yet, history gone, no worker): the caller serves the run record.
 */
export function createRunReader(temporal: Client, cacheMs: number, maxEntries = 10_000) {
  const entries = new Map<string, Entry>();
  let queries = 0;

  const refresh = (workflowId: string, entry: Entry) => {
    queries++;
    entry.inflight = temporal.workflow
      .getHandle(workflowId)
      .query<RunState>('run')
      .catch(() => undefined)
      .then((state) => {
        entry.last = { state, at: Date.now() };
        entry.inflight = undefined;
        return state;
      });
    return entry.inflight;
  };

  return {
    read(workflowId: string): Promise<RunState | undefined> {
      let entry = entries.get(workflowId);
      if (!entry) {
        entry = {};
        entries.set(workflowId, entry);
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
      }
      const { last } = entry;
      if (last?.state && Date.now() - last.at < cacheMs) return Promise.resolve(last.state);
      const pending = entry.inflight ?? refresh(workflowId, entry);
      // A run that could not be queried, or has none yet, waits for Temporal; a known live run answers at once.
      return last?.state ? Promise.resolve(last.state) : pending;
    },
    /** Stop serving a run (it closed): its record answers from now on. */
    forget(workflowId: string) {
      entries.delete(workflowId);
    },
    /** Queries sent so far (the benchmark reports queries per live run per second). */
    queryCount: () => queries,
  };
}

export type RunReader = ReturnType<typeof createRunReader>;
