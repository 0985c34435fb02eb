import { QueryRejectedError, WorkflowClient, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { LRUCache } from 'lru-cache';
import { runQuery } from '../contract/messages';
import type { HeldEntry, RunStatus, RunUsage } from '../contract/types';
import { closedStatusName, type ClosedStatus } from './endings';

/** A live run as the reader knows it: every entry from the first (contents may be references). */
export interface LiveView {
  status: RunStatus;
  createdAt: number;
  modifiedAt: number;
  entries: HeldEntry[];
  /** Absent from workflows started before usage was counted. */
  usage?: RunUsage;
}

/** What a read of a live run found. */
export type LiveRead =
  | { kind: 'live'; view: LiveView }
  /**
   * The workflow is closed (the query was rejected): its status says how it ended. `entries`: those this process
   * had read of it (what its reads showed), for a close written here to keep.
   */
  | { kind: 'closed'; status: ClosedStatus; entries: HeldEntry[] }
  /** Temporal has no such workflow (never started, or its history is gone); `entries` as for `closed`. */
  | { kind: 'gone'; entries: HeldEntry[] }
  /** The workflow did not answer within the wait: `entries` are those this process already has. */
  | { kind: 'unavailable'; entries: HeldEntry[] };

/** Where entries before the workflow's own first are (the store), and how many the record says are there. */
export interface StoredEntries {
  count: number;
  read(from: number, to: number): Promise<HeldEntry[]>;
  /**
   * The record's `created_at` (ms). What this process tracked of a run created at another time is of an earlier run
   * of the name (deleted since, possibly through another process): it is dropped, never mixed into this one.
   */
  createdAt?: number;
}

interface Tracked {
  /** The record's `created_at` (ms) the run was tracked for, when the first read knew it. */
  createdAt?: number;
  /** Every entry known, from the first: entries never change once written, so this only grows. */
  entries: HeldEntry[];
  /** About what the entries hold (their JSON size), for the bound on all the runs tracked. */
  bytes: number;
  /** The last answer (a new object each answer: the caller may key rendered bodies on it) and when it came. */
  view?: LiveView;
  at: number;
  /**
   * When Temporal last said it has no such workflow: reads say `gone` for `cacheMs` from then, as they reuse an
   * answer, then ask again (a run whose start is healed has a workflow a moment later).
   */
  goneAt?: number;
  /** When the last query failed or did not answer: reads then serve what they have without waiting. */
  failedAt?: number;
  inflight?: Promise<LiveRead>;
  /** When the query in flight was sent. */
  inflightAt?: number;
  /**
   * The workflow is closed (a query was rejected): every later read says so at once, rather than serving the last
   * live answer while asking again, until the caller forgets the run.
   */
  closed?: ClosedStatus;
}

export interface RunReaderOptions {
  /** How long an answer serves the polls of a run (about a client's poll interval). */
  cacheMs: number;
  /** How long a read waits for the workflow before it answers `unavailable` (the query goes on in the background). */
  waitMs: number;
  /** Deadline of one query. */
  queryTimeoutMs?: number;
  maxRuns?: number;
  /** Bound on the entries held for all tracked runs together (their JSON size). */
  maxBytes?: number;
}

/**
 * Reads live runs with the workflow's `run` query. A query costs a workflow task on a worker, so every poll of a run
 * shares one query at a time, and an answer younger than `cacheMs` is reused; an older one is still returned at once
 * while one refresh runs (stale-while-revalidate). Each query asks only for the entries this process does not have
 * (the first are read from the store), so an answer stays small on turn 50 as on turn 1. A read never waits longer
 * than `waitMs`: past it, or while the workflow has just failed to answer, it says `unavailable` and the caller
 * serves the record. Queries of a closed workflow are rejected (not replayed), which says how it ended. A workflow
 * Temporal does not have (its history deleted, or not started yet) is `gone`: its last answer is never served again,
 * and `gone` is reused for `cacheMs`, as an answer is.
 */
export function createRunReader(temporal: Client, options: RunReaderOptions) {
  const { cacheMs, waitMs, queryTimeoutMs = 10_000, maxRuns = 10_000, maxBytes = 128 * 1024 * 1024 } = options;
  const workflows = new WorkflowClient({ connection: temporal.connection, namespace: temporal.options.namespace, queryRejectCondition: 'NOT_OPEN' });
  /** The runs being read, the one read longest ago dropped past `maxRuns` or `maxBytes` of entries. */
  const runs = new LRUCache<string, Tracked>({ max: maxRuns, maxSize: maxBytes, sizeCalculation: (tracked) => Math.max(1, tracked.bytes) });
  /** Adds entries to what a run is known to have, and its new size to the bound. */
  const learn = (workflowId: string, tracked: Tracked, entries: HeldEntry[]) => {
    if (entries.length === 0) return;
    tracked.entries.push(...entries);
    tracked.bytes += entries.reduce((n, e) => n + JSON.stringify(e).length, 0);
    if (runs.get(workflowId) === tracked) runs.set(workflowId, tracked);
  };
  let queries = 0;

  const refresh = async (workflowId: string, tracked: Tracked, stored: StoredEntries): Promise<LiveRead> => {
    try {
      if (tracked.entries.length < stored.count) learn(workflowId, tracked, await stored.read(tracked.entries.length, stored.count));
      const handle = workflows.getHandle(workflowId);
      for (;;) {
        queries++;
        const known = tracked.entries.length;
        const snapshot = await workflows.withDeadline(Date.now() + queryTimeoutMs, () => handle.query(runQuery, { from: known }));
        // Entries before the workflow's first (it continued as new) are in the store.
        if (snapshot.from > known) learn(workflowId, tracked, await stored.read(known, snapshot.from));
        learn(workflowId, tracked, snapshot.entries.slice(Math.max(0, tracked.entries.length - snapshot.from)));
        if (tracked.entries.length >= snapshot.total || snapshot.entries.length === 0) {
          // The record may be ahead of the workflow in runs started before 2026-11-28: their first model call
          // records the first entries before the workflow hears of them. What the store has is the run's, and never
          // changes: the view shows it.
          const shown = Math.max(snapshot.total, Math.min(stored.count, tracked.entries.length));
          tracked.view = { status: snapshot.status, createdAt: snapshot.createdAt, modifiedAt: snapshot.modifiedAt, entries: tracked.entries.slice(0, shown), usage: snapshot.usage };
          tracked.at = Date.now();
          tracked.failedAt = undefined;
          tracked.goneAt = undefined;
          return { kind: 'live', view: tracked.view };
        }
      }
    } catch (err) {
      if (err instanceof QueryRejectedError) {
        const status = closedStatusName(err.status);
        if (status) {
          tracked.closed = status;
          return { kind: 'closed', status, entries: tracked.entries };
        }
      }
      if (err instanceof WorkflowNotFoundError) {
        // The last answer is of a workflow that is no more: it is never served again.
        tracked.view = undefined;
        tracked.failedAt = undefined;
        tracked.goneAt = Date.now();
        return { kind: 'gone', entries: tracked.entries };
      }
      tracked.failedAt = Date.now();
      return { kind: 'unavailable', entries: tracked.entries };
    } finally {
      tracked.inflight = undefined;
      tracked.inflightAt = undefined;
    }
  };

  return {
    async read(workflowId: string, stored: StoredEntries): Promise<LiveRead> {
      let tracked = runs.get(workflowId);
      // What was tracked of another run of the name (or of one not known) is dropped: `closed` included.
      if (tracked && stored.createdAt !== undefined && (tracked.createdAt ?? tracked.view?.createdAt) !== stored.createdAt) {
        runs.delete(workflowId);
        tracked = undefined;
      }
      if (!tracked) {
        tracked = { createdAt: stored.createdAt, entries: [], bytes: 0, at: 0 };
        runs.set(workflowId, tracked);
      }
      if (tracked.closed) return { kind: 'closed', status: tracked.closed, entries: tracked.entries };
      const { view } = tracked;
      const now = Date.now();
      if (tracked.goneAt !== undefined && now - tracked.goneAt < cacheMs) return { kind: 'gone', entries: tracked.entries };
      if (view && now - tracked.at < cacheMs) return { kind: 'live', view };
      if (!tracked.inflight) {
        tracked.inflightAt = now;
        tracked.inflight = refresh(workflowId, tracked, stored);
      }
      const pending = tracked.inflight;
      // A query that has not answered within the wait makes the last answer too old to serve as the live run.
      const slow = now - tracked.inflightAt! >= waitMs;
      if (view && tracked.failedAt === undefined && !slow) return { kind: 'live', view };
      // The workflow just failed to answer, or still has not: serve what there is while the query goes on.
      if (slow || (tracked.failedAt !== undefined && now - tracked.failedAt < queryTimeoutMs)) return { kind: 'unavailable', entries: tracked.entries };
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<LiveRead>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'unavailable', entries: tracked.entries }), waitMs);
      });
      try {
        return await Promise.race([pending, waited]);
      } finally {
        clearTimeout(timer);
      }
    },
    /** Stop tracking a run (it closed, or its end was just written): its record answers from now on. */
    forget(workflowId: string) {
      runs.delete(workflowId);
    },
    /** Queries sent so far (the benchmark reports queries per live run per second). */
    queryCount: () => queries,
  };
}

export type RunReader = ReturnType<typeof createRunReader>;
