import { unavailableDependency } from '../../../dependencies';
import type { Logger } from '../../../logger';
import type { Models } from '../../../store/models';
import { entryCount, findRun, readEntries, type RunRecord } from '../../../store/runs';
import { isTerminal } from '../../../contract/constants';
import type { HeldEntry, RunStatus } from '../../../contract/types';
import type { RunReads } from './reads';
import { markFollowedMany, readRunTexts, type RunText } from '../../../store/run-text';

/** A run as its streams see it. */
export interface RunState {
  status: RunStatus;
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
  /** The answer's text so far (the worker writes it while the run is followed), or null. */
  readonly text: RunText | null;
  /** Entry `index` as reads present it (references resolved), as JSON. Throws StoredContentMissing once the run is deleted. */
  entryJson(index: number): Promise<string>;
  /** The watch stops with its last stream. */
  leave(): void;
}

/** The fastest a watch reads, whatever LIVE_RUN_CACHE_MS says (0 would make every read a query). */
const MIN_TICK_MS = 100;
/** While the workflow does not answer (or has not started), the run's record is read at most this often. */
const RECORD_EVERY_MS = 1_000;
/** A watched live run is marked followed this often, for FOLLOW_FOR_MS (the worker then writes its text so far). */
const FOLLOW_EVERY_MS = 10_000;
const FOLLOW_FOR_MS = 30_000;
/** How often a watch reads its run's text so far. */
const TEXT_EVERY_MS = 200;

/**
 * One watch per live run followed in this process, shared by all its streams: it reads the run as a read does
 * (`current`, reads.ts: through the shared live reader, runs/live-reader.ts) every half `cacheMs` (the Python client's poll
 * interval at the default), so a run's streams cost what one poller costs, and no more queries than its polls would:
 * a query goes out only once the reader's answer is `cacheMs` old, and polls of the run share it. While the workflow
 * does not answer, the run is what the record and the reader have; a run whose workflow closed or is gone is settled
 * as a read settles it, a lost start healed. The run ends for its streams once its record is closed (after the
 * workflow said it ended the run, its record is read for its end). A watch stops with its last stream, or when its
 * run ends.
 */
export function createRunWatches(
  deps: { models: Models; logger: Logger },
  reads: Pick<RunReads, 'current' | 'resolve'>,
  timing: { cacheMs: number },
) {
  const { models, logger } = deps;
  const tickMs = Math.max(timing.cacheMs / 2, MIN_TICK_MS);
  const watches = new Map<string, Shared>();

  class Shared {
    readonly listeners = new Set<() => void>();
    state: RunState | undefined;
    text: RunText | null = null;
    /** Until when this process last marked the run followed. */
    followedUntil = 0;
    private readonly entries: HeldEntry[] = [];
    /**
     * Entries being resolved, shared by the streams asking at once; dropped once resolved (the text cache keeps
     * the stored contents), so a watch holds no rendered entry for longer than a send.
     */
    private readonly resolving = new Map<number, Promise<string>>();
    private readonly createdAt: number;
    private recordReadAt = 0;
    private timer: NodeJS.Timeout | undefined;
    private stopped = false;

    constructor(private record: RunRecord) {
      this.createdAt = record.created_at.getTime();
      this.timer = setTimeout(() => void this.tick(), 0);
      startTexts();
    }

    /** The run's text so far as the process's last read found it (null: none); the streams hear of a change. */
    takeText(text: RunText | null) {
      const last = this.text;
      if (this.stopped || (text?.seq === last?.seq && text?.call === last?.call && text?.text === last?.text)) return;
      this.text = text;
      for (const listener of [...this.listeners]) listener();
    }

    get id() {
      return this.record._id;
    }

    sameRun(record: RunRecord) {
      return record.created_at.getTime() === this.createdAt;
    }

    entryJson(index: number): Promise<string> {
      let json = this.resolving.get(index);
      if (!json) {
        const entry = this.entries[index];
        if (entry === undefined) return Promise.reject(new Error(`entry ${index} of ${this.record._id} is not known yet`));
        json = reads.resolve([entry]).then(([resolved]) => JSON.stringify(resolved));
        this.resolving.set(index, json);
        const done = () => void this.resolving.delete(index);
        json.then(done, done);
      }
      return json;
    }

    /** Ends the watch as `end` says (its streams are told), or quietly when its last stream left. */
    stop(end?: RunState['end']) {
      if (this.stopped) return;
      this.stopped = true;
      clearTimeout(this.timer);
      this.text = null;
      if (watches.get(this.record._id) === this) watches.delete(this.record._id);
      if (end) this.update({ ...(this.state ?? { status: this.record.status as RunStatus, modifiedAt: this.record.modified_at.getTime(), count: this.entries.length }), end });
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
      const now = Date.now();
      const reread = now - this.recordReadAt >= RECORD_EVERY_MS;
      const run = await reads.current(this.record, { reread });
      if (this.stopped) return;
      if (run?.kind === 'live') {
        this.learn(run.view.entries);
        if (!isTerminal(run.view.status)) {
          // Runs started before 2026-11-28: their first model call prepares them and records the first entries before
          // the workflow has them.
          if (this.entries.length === 0 && reread) await this.readAhead(now);
          if (this.stopped) return;
          return this.update({ status: run.view.status, modifiedAt: run.view.modifiedAt, count: this.entries.length });
        }
        // The workflow has ended the run and is writing its end: the run ends with its record's end (a run deleted
        // meanwhile, with its task, ends as deleted). Until the record has it, the streams keep the last status.
        const record = await findRun(models, this.record._id);
        if (this.stopped) return;
        if (!record || !this.sameRun(record)) return this.stop('deleted');
        if (!isTerminal(record.status)) return this.state && this.update({ ...this.state, count: this.entries.length });
        return this.settle(record, []);
      }
      if (!run || !this.sameRun(run.record)) return this.stop('deleted');
      if (run.record !== this.record || reread) this.recordReadAt = now;
      return this.settle(run.record, run.known);
    }

    /** The record's entries, read while the workflow has none of them yet (at most every RECORD_EVERY_MS). */
    private async readAhead(now: number) {
      this.recordReadAt = now;
      const record = await findRun(models, this.record._id);
      if (this.stopped || !record || !this.sameRun(record)) return;
      this.record = record;
      await this.learnStored(record);
    }

    /** Reads the entries `record` has beyond those this watch knows. */
    private async learnStored(record: RunRecord) {
      const stored = entryCount(record);
      if (stored > this.entries.length) this.entries.push(...(await readEntries(models, record, this.entries.length, stored)));
    }

    /** The run as `record` has it, with the entries this process knows beyond it (`known`, from the first). */
    private async settle(record: RunRecord, known: HeldEntry[]) {
      this.record = record;
      this.learn(known);
      await this.learnStored(record);
      this.update({ status: record.status as RunStatus, modifiedAt: record.modified_at.getTime(), count: this.entries.length, end: isTerminal(record.status) ? 'closed' : undefined });
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

  /**
   * Every TEXT_EVERY_MS while this process watches live runs: their follows renewed when due (one command for all, each
   * run every FOLLOW_EVERY_MS for FOLLOW_FOR_MS, so the workers write their texts so far) and their texts read (one
   * query for all), so a process's followed runs cost two commands a tick, not two per run.
   */
  let textTimer: NodeJS.Timeout | undefined;
  function startTexts() {
    textTimer ??= setTimeout(() => void readTexts(), 0);
  }
  async function readTexts() {
    const watched = [...watches.values()];
    try {
      const now = Date.now();
      const due = watched.filter((w) => now >= w.followedUntil - (FOLLOW_FOR_MS - FOLLOW_EVERY_MS));
      if (due.length) {
        await markFollowedMany(models, due.map((w) => w.id), now + FOLLOW_FOR_MS);
        for (const w of due) w.followedUntil = now + FOLLOW_FOR_MS;
      }
      const texts = await readRunTexts(models, watched.map((w) => w.id));
      for (const w of watched) w.takeText(texts.get(w.id) ?? null);
    } catch (err) {
      if (!unavailableDependency(err)) logger.warn({ err, runs: watched.length }, 'run streams could not read their runs\' texts');
    }
    textTimer = watches.size > 0 ? setTimeout(() => void readTexts(), TEXT_EVERY_MS) : undefined;
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
        get text() {
          return joined.text;
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
