import { ApplicationFailure } from '@temporalio/common';
import type { Models } from '../store/models';
import type { PageVersions } from '../store/run-content';
import {
  claimRunEnd,
  entryCount,
  findClaimedEnd,
  findRecordState,
  findRun,
  insertRun,
  pastFirstPage,
  progressSet,
  updateRunIf,
  updateRunIfReturning,
  type NewRun,
  type RecordCondition,
  type RecordState,
  type RunProgress,
  type RunRecord,
  type WrittenRun,
} from '../store/runs';
import { isTerminal } from '../contract/constants';
import type { HeldEntry, RunRef } from '../contract/types';

/**
 * The recorder: the one code path that writes a run record, whoever calls it (the trigger; the workflow, through its
 * local activities, the one writer while it runs; a reader or a cancel closing a run whose workflow is gone or never
 * started, the reconciler). Every write after the insert is
 * conditional on the record found by `_id` (store/runs.ts RecordCondition): a closed record never changes again, and
 * a write for another run of the name (deleted and triggered again since) changes nothing. A write that loses its
 * condition says so to its caller (`Recorded`), which decides what that means for it; none throws for it.
 */

/** What a write of a run record came to. */
export type Recorded =
  /** Written now, or found already written by an earlier attempt of the same write (its answer lost). `closed`: an end's, what announcing it needs. */
  | { written: true; earlier?: true; closed?: WrittenRun }
  /** Not written: the record is closed (`closed`), gone (deleted), or of another run of the name (`another-run`). */
  | { written: false; because: 'closed' | 'gone' | 'another-run' };

/** Past-first-page writes read, then write while nothing changed: tries before the write is refused as `closed`. */
const OPTIMISTIC_TRIES = 5;

/** The run's record, `pending`, with its trigger data. Throws a duplicate-key error (E11000) when the name was used before. */
export function createRecord(models: Models, run: NewRun): Promise<RunRecord> {
  return insertRun(models, run);
}

/**
 * A write of the run by its workflow or its activities: the status, the entries from `progress.entries.from` and the
 * messages, while the record is open and is this run's (`run.createdAt`). Within the record's own page (a short run's
 * every write) it is one conditional update by `_id`; past it, the record is read first and the write made only while
 * no other write has added entries since (`entryCount`), so no page is written for a run closed meanwhile. A write of
 * the run's end (`ready`, `error`) gives back what announcing it needs.
 */
export async function recordProgress(models: Models, run: RunRef, progress: RunProgress): Promise<Recorded> {
  const end = isTerminal(progress.status);
  if (!pastFirstPage(progress)) {
    const condition: RecordCondition = { open: true, createdAt: run.createdAt };
    const set = await progressSet(models, run.id, progress);
    if (end) return commitEnd(models, run, set, progress);
    if (await updateRunIf(models, run.id, condition, set)) return afterProgress(models, run);
    return lostCondition(models, run, progress);
  }
  for (let attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++) {
    const state = await findRecordState(models, run.id);
    const refused = refusal(state, run);
    if (refused) return refused.because === 'closed' && landedBefore(state!, progress) ? { written: true, earlier: true } : refused;
    const condition: RecordCondition = { open: true, createdAt: run.createdAt, entryCount: state!.entry_count };
    const set = await progressSet(models, run.id, progress, (state!.page_versions ?? {}) as PageVersions);
    if (end) return commitEnd(models, run, set, progress);
    if (await updateRunIf(models, run.id, condition, set)) return afterProgress(models, run);
  }
  return lostCondition(models, run, progress);
}

/**
 * Ends a run from outside its workflow (gone from Temporal, never started, closed without writing its end): `error`,
 * with `reason` as its last entry, while the record is open. `known`: the run's entries as the caller read them from
 * the workflow (what reads showed, or what the closed workflow held), the first of them the run's entry `knownFrom`:
 * those the record lacks are written before the reason, so the record says what readers saw (none when the record
 * lacks some before them). Its end is claimed like any other (commitEnd): the first end of the run wins.
 */
export async function recordOutsideEnd(models: Models, runId: string, reason: string, known: readonly HeldEntry[] = [], knownFrom = 0): Promise<Recorded> {
  const entry: HeldEntry = { msg: reason, error: reason, lastMessage: { role: 'system', content: reason } };
  for (let attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++) {
    const record = await findRun(models, runId);
    if (!record) return { written: false, because: 'gone' };
    if (isTerminal(record.status)) return { written: false, because: 'closed' };
    const from = entryCount(record);
    const missing = from >= knownFrom ? known.slice(from - knownFrom) : [];
    const set = await progressSet(models, runId, { status: 'error', modifiedAt: Date.now(), entries: { from, items: [...missing, entry] } }, (record.page_versions ?? {}) as PageVersions);
    const recorded = await commitEnd(models, { id: runId, createdAt: record.created_at.getTime() }, set);
    if (recorded.written || recorded.because !== 'closed' || !(await stillOpen(models, runId))) return recorded;
  }
  return { written: false, because: 'closed' };
}

/**
 * Writes a run's end: claims it first (store/runs.ts claimRunEnd), so that of two ends written at once (a model's
 * answer and a cancel, a reader's close) the first claimed is the record's, on FerretDB too, where a conditional update
 * is not atomic with its filter. The claim's winner writes it to the record; a loser is told `closed`, and makes sure
 * the record has the winning end (its writer may have stopped between its claim and its write). `progress`: the
 * workflow's write, told apart from an earlier attempt of it whose answer was lost.
 */
async function commitEnd(models: Models, run: RunRef, set: Record<string, unknown>, progress?: RunProgress): Promise<Recorded> {
  const claim = await claimRunEnd(models, run, set);
  if (claim === 'won') {
    // The end is the run's from its claim on: written while the record is open, whatever was added since it was read.
    const closed = await updateRunIfReturning(models, run.id, { open: true, createdAt: run.createdAt }, set);
    if (closed) return { written: true, closed };
    // A loser of the claim writes the claimed end too (its writer may have stopped): found closed with this very end,
    // which no other could have written once claimed, the write is this one's (three ends at once under load once
    // all answered `closed`).
    const record = await findRun(models, run.id);
    if (record && record.created_at.getTime() === run.createdAt && isTerminal(record.status) && record.status === set.status) {
      return { written: true, closed: { _id: record._id, owner: record.owner, task_id: record.task_id, live_slot: record.live_slot, created_at: record.created_at, status: record.status } as WrittenRun };
    }
    return progress ? lostCondition(models, run, progress) : { written: false, because: 'closed' };
  }
  // The claimed end, written to the record if it is not there yet (the same update again changes nothing).
  await updateRunIf(models, run.id, { open: true, createdAt: run.createdAt }, claim.set);
  if (claim.same) return { written: true, earlier: true };
  return { written: false, because: 'closed' };
}

/**
 * After a write of the run's progress (not its end): on FerretDB, whose conditional update is not atomic with its
 * filter, the write may have landed on a record an end had just closed, and reopened it. An end is claimed before it is
 * written (commitEnd), so a progress write landing after an end finds its claim here: the end is written again, and
 * the progress write is told `closed`. (On MongoDB the condition is atomic and the claim, when there is one, was
 * applied already: writing it again changes nothing.)
 */
async function afterProgress(models: Models, run: RunRef): Promise<Recorded> {
  const claimed = await findClaimedEnd(models, run);
  if (!claimed) return { written: true };
  await updateRunIf(models, run.id, { open: true, createdAt: run.createdAt }, claimed);
  return { written: false, because: 'closed' };
}

/** Whether a record is there and open (a close that lost its claim to an end being written tries again only then). */
async function stillOpen(models: Models, runId: string): Promise<boolean> {
  const state = await findRecordState(models, runId);
  return !!state && !isTerminal(state.status);
}

/** Why a record refuses a write of `run` (its state as read), or undefined when it takes it. */
function refusal(state: RecordState | null, run: RunRef): Extract<Recorded, { written: false }> | undefined {
  if (!state) return { written: false, because: 'gone' };
  if (state.created_at.getTime() !== run.createdAt) return { written: false, because: 'another-run' };
  if (isTerminal(state.status)) return { written: false, because: 'closed' };
  return undefined;
}

/** Whether the record holds exactly this write (an earlier attempt of it whose answer was lost, or a replay). */
const landedBefore = (state: RecordState, progress: RunProgress) =>
  state.status === progress.status && state.entry_count === progress.entries.from + progress.entries.items.length;

/** A write whose condition did not hold: why, read from the record (or written after all, by an earlier attempt). */
async function lostCondition(models: Models, run: RunRef, progress: RunProgress): Promise<Recorded> {
  const state = await findRecordState(models, run.id);
  const refused = refusal(state, run);
  if (!refused) return { written: false, because: 'closed' }; // open but moved on: another writer's entries stand
  return refused.because === 'closed' && landedBefore(state!, progress) ? { written: true, earlier: true } : refused;
}


/**
 * Legacy, for runs started before 2026-11-28, whose first model call (`prepareAndCallModel`) records their start:
 * the "start with its end" optimisation, inside the recorder. (A later run's start is the workflow's, written at its
 * `startWriteDelayMs` or with its first turn; only its end may come with it, in one write, from its first call:
 * `startWithEnd`.) The call defers the
 * write of its start (`running`, the first entries and the prompt: `write`) by `delayMs`. A model that answers sooner has the start written
 * with the run's end (`startWithEnd`), one write of the record instead of two; a slower one has the start written at
 * the delay, as readers expect. `made()` stops the write if it has not begun and tells whether the record has the
 * start: false when it was not begun or failed in the store (the caller writes it, alone or with the end); it throws
 * the write's own failure (RunClosed: the record was found closed). `onStoreFailure` hears a failure of the store.
 */
export function deferStart(write: () => Promise<void>, delayMs: number, onStoreFailure: (err: unknown) => void) {
  let begun: Promise<boolean> | undefined;
  const timer = setTimeout(() => {
    begun = write().then(
      () => true,
      (err: unknown) => {
        if (err instanceof ApplicationFailure) throw err;
        onStoreFailure(err);
        return false;
      },
    );
    begun.catch(() => undefined);
  }, delayMs);
  return {
    async made(): Promise<boolean> {
      clearTimeout(timer);
      return begun ?? false;
    },
  };
}

/** One write of a run's start (its first entries, from 0, and the prompt) and its end (`entry` after them): a first call's answer that ends the run. */
export function startWithEnd(start: RunProgress, end: Pick<RunProgress, 'status' | 'modifiedAt' | 'usage'> & { entry: HeldEntry }): RunProgress {
  return { ...start, status: end.status, modifiedAt: end.modifiedAt, entries: { from: 0, items: [...start.entries.items, end.entry] }, usage: end.usage };
}
