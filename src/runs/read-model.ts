import { findRun, entryCount, readEntries, type RunRecord } from '../store/runs';
import { createTtlCache } from '../ttl-cache';
import { isTerminal } from '../contract/constants';
import type { HeldEntry } from '../contract/types';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { GONE_REASON } from './endings';
import type { LiveView, RunReader } from './live-reader';
import type { Runs } from '.';

/** A live run as it is now (`current`): what reads render, and what event streams send. */
export type CurrentRun =
  /** The workflow answered. A terminal status: it has ended the run and is writing its end (the record has it next). */
  | { kind: 'live'; view: LiveView }
  /**
   * The record as the store has it (closed, or its workflow did not answer), and `known`: the entries from the first
   * that this process has (more than the record's when the workflow got further than its last write).
   */
  | { kind: 'record'; record: RunRecord; known: HeldEntry[] };

/**
 * The run's read model: its record (kept for `recordCacheMs`, refreshed ahead while polled: polls cost no database
 * read each; another API process may serve a run deleted with its task that long; a miss is not kept, so a run is
 * readable as soon as its trigger answered), and a live run as it is now: the workflow's answer while it gives one,
 * else the record, after settling what Temporal said (a run whose workflow closed or is gone without writing its end
 * is ended, and announced, through the lifecycle; a lost start is healed).
 */
export function createRunReadModel(deps: {
  models: Models;
  logger: Logger;
  lifecycle: Runs;
  reader: RunReader;
  healLostStart: (record: RunRecord) => Promise<void>;
  recordCacheMs: number;
}) {
  const { models, lifecycle, reader } = deps;
  const records = createTtlCache<RunRecord | null>(deps.recordCacheMs, { refreshAhead: true, keep: (record) => record !== null });
  const storedEntries = (record: RunRecord) => ({
    count: entryCount(record),
    read: (from: number, to: number) => readEntries(models, record, from, to),
    createdAt: record.created_at.getTime(),
  });

  /**
   * The live run of `record` (a record not closed, as cached or last read) as it is now. null when the record is gone
   * (deleted). `reread: false` answers a workflow that does not answer (or a run not started yet) with `record` as
   * given, not read from the store again: a stream's watch reads it at most once a second, while polls read it each time.
   */
  const current = async (record: RunRecord, options: { reread?: boolean } = {}): Promise<CurrentRun | null> => {
    const runId = record._id;
    const live = await reader.read(runId, storedEntries(record));
    if (live.kind === 'live') {
      // The workflow has ended the run and is writing its end: the next read takes the closed record.
      if (isTerminal(live.view.status)) {
        records.forget(runId);
        reader.forget(runId);
      }
      return live;
    }
    const gone = live.kind === 'gone';
    const settled = live.kind === 'closed' || (gone && record.started);
    // The close keeps what this process's reads and streams showed of the workflow (entries it held unwritten).
    if (live.kind === 'closed') await lifecycle.closeFromWorkflow(runId, live.status, undefined, live.entries);
    else if (settled) await lifecycle.close(runId, GONE_REASON, live.entries);
    // The heal is a read's extra: its failure, whatever Temporal answered, never fails the read, which serves the
    // record (and the next read tries the heal again).
    else if (gone) await deps.healLostStart(record).catch((err: unknown) => deps.logger.warn({ run: runId, err }, 'could not start a run whose start was lost; the next read tries again'));
    const known = live.kind === 'unavailable' ? live.entries : [];
    if (!settled && options.reread === false) return { kind: 'record', record, known };
    // The record as the store has it now (the cached one may be a status behind); once settled, straight from the
    // store and not kept (the next read reads it again).
    records.forget(runId);
    if (settled) reader.forget(runId);
    const fresh = settled ? await findRun(models, runId) : await records.get(runId, () => findRun(models, runId));
    if (!fresh) return null;
    // What this process knew of an earlier run of the name (deleted since) is not this one's.
    return { kind: 'record', record: fresh, known: fresh.created_at.getTime() === record.created_at.getTime() ? known : [] };
  };

  return {
    current,
    /** The run's record, through the cache (null when there is none). */
    record: (runId: string, load: () => Promise<RunRecord | null>) => records.get(runId, load),
    /** Forgets this process's copy of one run's record (read again next time). */
    forgetRecord: (runId: string) => records.forget(runId),
    /** Forgets this process's copies of runs' records under `prefix` (the task was deleted, or the run changed through it). */
    forgetRecords: (prefix: string) => records.forgetPrefix(prefix),
    /** Forgets everything this process holds of a deleted run. */
    forgetRun(runId: string) {
      records.forget(runId);
      reader.forget(runId);
    },
  };
}

export type RunReadModel = ReturnType<typeof createRunReadModel>;
