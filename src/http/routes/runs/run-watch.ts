import type { Client } from '@temporalio/client';
import { unavailableDependency } from '../../../dependencies';
import type { Logger } from '../../../logger';
import type { Models } from '../../../store/models';
import { closeRun, entryCount, findRun, readEntries, type RunRecord } from '../../../store/runs';
import { closeFromWorkflow, GONE_REASON } from '../../../temporal/run-endings';
import { announceRunClosed, type AnnounceDeps } from '../../../temporal/webhook-start';
import type { RunReader } from '../../../temporal/run-reader';
import { isTerminal } from '../../../../workflows/constants';
import type { HeldEntry, ResultEntry } from '../../../../workflows/types';

/** A run as its streams see it. */
export interface RunState {
  status: string;
  modifiedAt: number;
  /** Entries known, from the first: entries never change once written, so this only grows. */
  count: number;
  /** `closed`: the run has ended, nothing more comes. `deleted`: the run is gone (deleted, or its name taken anew). */
  end?: 'closed' | 'deleted';
}

/** One stream's hold on a run's watch. */
export interface Watch {
  /** undefined until the run was first read. */
  readonly state: RunState | undefined;
  /** Entry `index` as reads present it (references resolved), as JSON. Throws StoredContentMissing once the run is deleted. */
  entryJson(index: number): Promise<string>;
  /** The watch stops with its last stream. */
  leave(): void;
}

/** The fastest a watch reads, whatever LIVE_RUN_CACHE_MS says (0 would make every read a query). */
const MIN_TICK_MS = 100;
/** While the store is read for a run whose workflow does not answer, it is read at most this often. */
const RECORD_EVERY_MS = 1_000;

/**
 * One watch per live run followed in this process, shared by all its streams: it reads the run through the shared
 * live reader (run-reader.ts) every half `cacheMs` (the Python client's poll interval at the default), so a run's
 * streams cost what one poller costs, and no more queries than its polls would: a query goes out only once the
 * reader's answer is `cacheMs` old, and polls of the run share it. While the workflow does not answer, the run is
 * what the record and the reader have; a run whose workflow closed or is gone is settled as a read settles it (its
 * end written when its workflow did not write it). A watch stops with its last stream, or when its run ends.
 */
export function createRunWatches(
  deps: { models: Models; temporal: Client; logger: Logger; config: AnnounceDeps['config'] },
  reader: RunReader,
  resolve: (entries: HeldEntry[]) => Promise<ResultEntry[]>,
  timing: { cacheMs: number; waitMs: number },
) {
  const { models, logger } = deps;
  const tickMs = Math.max(timing.cacheMs / 2, MIN_TICK_MS);
  // The reader answers a read at once with its last answer while a refresh runs, and says nothing when the refresh
  // is rejected (the workflow closed): an answer unchanged for longer than a live workflow takes to give a new one
  // (its age, then a query up to the reader's wait, which makes it `unavailable`) means that; the watch then reads
  // afresh, waiting for the workflow's own word.
  const staleMs = timing.cacheMs + timing.waitMs + 2 * tickMs;
  const watches = new Map<string, Shared>();

  class Shared {
    readonly listeners = new Set<() => void>();
    state: RunState | undefined;
    private readonly entries: HeldEntry[] = [];
    private readonly rendered: Array<Promise<string> | undefined> = [];
    private readonly createdAt: number;
    private lastView: unknown;
    /** When `lastView` was first seen. */
    private viewSince = 0;
    private recordReadAt = 0;
    private timer: NodeJS.Timeout | undefined;
    private stopped = false;

    constructor(private record: RunRecord) {
      this.createdAt = record.created_at.getTime();
      this.timer = setTimeout(() => void this.tick(), 0);
    }

    sameRun(record: RunRecord) {
      return record.created_at.getTime() === this.createdAt;
    }

    entryJson(index: number): Promise<string> {
      let json = this.rendered[index];
      if (!json) {
        const entry = this.entries[index];
        if (entry === undefined) return Promise.reject(new Error(`entry ${index} of ${this.record._id} is not known yet`));
        json = resolve([entry]).then(([resolved]) => JSON.stringify(resolved));
        this.rendered[index] = json;
        // A failed load (the store did not answer) is tried again by the next stream that needs it.
        json.catch(() => {
          if (this.rendered[index] === json) this.rendered[index] = undefined;
        });
      }
      return json;
    }

    /** Ends the watch as `end` says (its streams are told), or quietly when its last stream left. */
    stop(end?: RunState['end']) {
      if (this.stopped) return;
      this.stopped = true;
      clearTimeout(this.timer);
      if (watches.get(this.record._id) === this) watches.delete(this.record._id);
      if (end) this.update({ ...(this.state ?? { status: this.record.status, modifiedAt: this.record.modified_at.getTime(), count: this.entries.length }), end });
    }

    private async tick() {
      this.timer = undefined;
      try {
        await this.observe();
      } catch (err) {
        // The store or Temporal did not answer: the streams keep what they have, and the next tick tries again.
        if (!unavailableDependency(err)) logger.warn({ err, run: this.record._id }, 'a run stream could not read its run');
      }
      if (!this.stopped) this.timer = setTimeout(() => void this.tick(), tickMs);
    }

    /** Reads the run once. */
    private async observe(): Promise<void> {
      const runId = this.record._id;
      const live = await reader.read(runId, {
        count: entryCount(this.record),
        read: (from, to) => readEntries(models, this.record, from, to),
        createdAt: this.createdAt,
      });
      if (this.stopped) return;
      const now = Date.now();
      if (live.kind === 'live') {
        if (live.view !== this.lastView) {
          this.lastView = live.view;
          this.viewSince = now;
        } else if (now - this.viewSince >= staleMs) {
          reader.forget(runId);
          this.lastView = undefined;
          return;
        }
        this.learn(live.view.entries);
        const closed = isTerminal(live.view.status);
        // The workflow has ended the run and is writing its end: what it answered is the whole run.
        if (closed) reader.forget(runId);
        this.update({ status: live.view.status, modifiedAt: live.view.modifiedAt, count: this.entries.length, end: closed ? 'closed' : undefined });
        return;
      }
      this.lastView = undefined;
      if (live.kind === 'unavailable') {
        this.learn(live.entries);
        if (this.state && now - this.recordReadAt < RECORD_EVERY_MS) return this.update({ ...this.state, count: this.entries.length });
      }
      if (live.kind === 'closed') await closeFromWorkflow(deps, runId, live.status);
      else if (live.kind === 'gone' && this.record.started && (await closeRun(models, runId, GONE_REASON))) {
        logger.warn({ run: runId }, 'run ended: its workflow is gone');
        await announceRunClosed(deps, runId);
      }
      if (live.kind !== 'unavailable') reader.forget(runId);
      // The record as the store has it now, with the entries this process knows beyond it.
      this.recordReadAt = now;
      const current = await findRun(models, runId);
      if (this.stopped) return;
      if (!current || !this.sameRun(current)) return this.stop('deleted');
      this.record = current;
      const stored = entryCount(current);
      if (stored > this.entries.length) this.entries.push(...(await readEntries(models, current, this.entries.length, stored)));
      const closed = isTerminal(current.status);
      this.update({ status: current.status, modifiedAt: current.modified_at.getTime(), count: this.entries.length, end: closed ? 'closed' : undefined });
    }

    /** `list`: entries from the first (a prefix of the run's, or more of it than this watch has). */
    private learn(list: readonly HeldEntry[]) {
      for (let i = this.entries.length; i < list.length; i++) this.entries.push(list[i]!);
    }

    private update(next: RunState) {
      const last = this.state;
      if (last && last.count === next.count && last.status === next.status && last.end === next.end) return;
      this.state = next;
      if (next.end) this.stop();
      for (const listener of [...this.listeners]) listener();
    }
  }

  return {
    /**
     * Follows `record`'s run; `changed` is called (later, never from within `join`) whenever its state changes. A
     * watch of an earlier run of the name (deleted since) ends as `deleted` for its streams.
     */
    join(record: RunRecord, changed: () => void): Watch {
      let shared = watches.get(record._id);
      if (shared && !shared.sameRun(record)) {
        shared.stop('deleted');
        shared = undefined;
      }
      if (!shared) {
        shared = new Shared(record);
        watches.set(record._id, shared);
      }
      const joined = shared;
      joined.listeners.add(changed);
      return {
        get state() {
          return joined.state;
        },
        entryJson: (index) => joined.entryJson(index),
        leave() {
          joined.listeners.delete(changed);
          if (joined.listeners.size === 0) joined.stop();
        },
      };
    },
  };
}

export type RunWatches = ReturnType<typeof createRunWatches>;
