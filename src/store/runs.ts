import type { Types } from 'mongoose';
import type { HeldEntry, Message, RunIdentity, RunStatus, RunUsage } from '../../workflows/types';
import { isTerminal, TERMINAL } from '../../workflows/constants';
import { retryWhileBusy } from './connect';
import { keysetCursor, keysetQuery, type PageRequest } from './keyset';
import type { Models } from './models';
import { PAGE_SIZE, readPaged, writePages } from './run-content';

/**
 * The run record: one document per run, `_id` = the run's identity = its workflow id (names cannot contain "/",
 * store/names.ts, so `run/<owner>/<profile>/<task>/<run>` is unambiguous and reads well in the Web UI). Inserted by
 * the trigger; after that the run's workflow is its only writer (FerretDB applies concurrent updates of one document
 * as read-modify-write, so two writers would lose each other's fields), except `closeRun`, for a workflow that
 * closed without writing its end.
 */
export const runWorkflowId = (id: RunIdentity) => `run/${id.owner}/${id.profile}/${id.task}/${id.run}`;

/** A run document as stored (the schema has no version key). */
export type RunRecord = Omit<NonNullable<Awaited<ReturnType<typeof findRun>>>, '__v'>;

export const identityFields = (id: RunIdentity) => ({ owner: id.owner, profile: id.profile, task: id.task, name: id.run });
export const recordIdentity = (record: Pick<RunRecord, 'owner' | 'profile' | 'task' | 'name'>): RunIdentity => ({
  owner: record.owner,
  profile: record.profile,
  task: record.task,
  run: record.name,
});

/** By _id (= the workflow id): the one lookup FerretDB answers without scanning the collection. */
export function findRun(models: Models, id: RunIdentity | string) {
  return models.Run.findById(typeof id === 'string' ? id : runWorkflowId(id)).lean();
}

/** What a trigger stores: the run, `pending`, with its trigger data. */
export interface NewRun {
  identity: RunIdentity;
  taskId: Types.ObjectId;
  taskVersion: number;
  runner: string;
  payload: Record<string, unknown>;
  at: Date;
  /** Its place among its owner's live runs (store/live-runs.ts), when the limit is on. */
  liveSlot?: number;
}

/** Inserts the run record; throws a duplicate-key error (E11000) when the name was used before. */
export async function insertRun(models: Models, run: NewRun): Promise<RunRecord> {
  // With the driver: every field is set here (the shape of models.ts's run schema), and a trigger is the hot path,
  // so it skips building a mongoose document for it.
  const doc = {
    _id: runWorkflowId(run.identity),
    ...identityFields(run.identity),
    task_id: run.taskId,
    task_version: run.taskVersion,
    runner: run.runner,
    status: 'pending',
    payload_json: JSON.stringify(run.payload),
    results: [],
    entry_count: 0,
    started: false,
    ...(run.liveSlot !== undefined ? { live_slot: run.liveSlot } : {}),
    created_at: run.at,
    modified_at: run.at,
  };
  await retryWhileBusy(() => models.Run.collection.insertOne(doc as never));
  return doc as RunRecord;
}

/** What the workflow writes: its status, and the entries and messages the store does not have yet. */
export interface RunProgress {
  status: RunStatus;
  modifiedAt: number;
  entries: { from: number; items: HeldEntry[] };
  messages?: { from: number; items: Message[] };
  /** The run's usage so far (tokens, model and tool calls). */
  usage?: RunUsage;
}

/**
 * The workflow's write of its run. Pages past the first go first, then the record (status, count and the first
 * page in one update), so a record never counts an entry the store does not have. Idempotent.
 */
export async function recordProgress(models: Models, runId: string, progress: RunProgress): Promise<void> {
  const set = await progressSet(models, runId, progress);
  await retryWhileBusy(() => models.Run.collection.updateOne({ _id: runId as never }, { $set: set }));
}

/** Writes the pages past the first; returns the record's `$set` (the first page's items among it). */
async function progressSet(models: Models, runId: string, progress: RunProgress): Promise<Record<string, unknown>> {
  const { entries, messages } = progress;
  return {
    ...(await writePages(models, runId, 'e', entries.from, entries.items)),
    ...(messages ? await writePages(models, runId, 'm', messages.from, messages.items) : {}),
    status: progress.status,
    modified_at: new Date(progress.modifiedAt),
    entry_count: entries.from + entries.items.length,
    started: true,
    ...(progress.usage ? { usage: progress.usage } : {}),
  };
}

/** Whether a write reaches past the record's own page (it then writes `run_pages` documents too). */
const pastFirstPage = ({ entries, messages }: RunProgress) =>
  entries.from + entries.items.length > PAGE_SIZE || (messages !== undefined && messages.from + messages.items.length > PAGE_SIZE);

/**
 * The workflow's write of its run, unless the record is closed, or is another run of the name (deleted and triggered
 * again since): a closed run never changes, whoever else saw it closed (its readers, its webhook). False when it
 * wrote nothing. A write within the record's own page (most: a short run's every write) is one conditional update by
 * `_id`; a longer one reads the record first, so that no page is written for a run closed or deleted.
 */
export async function recordOpenProgress(models: Models, run: { id: string; createdAt: number }, progress: RunProgress): Promise<boolean> {
  if (pastFirstPage(progress)) return (await readThenRecord(models, run, progress)) !== null;
  const set = await progressSet(models, run.id, progress);
  // The filter leads with `_id`, so FerretDB finds the record by its index (scripts/install-tools.sh) and applies the
  // rest to it; MongoDB makes the check and the write one atomic step.
  const { matchedCount } = await retryWhileBusy(() => models.Run.collection.updateOne({ _id: run.id as never, ...openFilter(run) }, { $set: set }));
  return matchedCount > 0;
}

/**
 * The write of a run's end (`ready` or `error`), as `recordOpenProgress`, giving back what the record was (what
 * announcing the close needs), or null when it wrote nothing. One conditional find-and-update by `_id`: FerretDB
 * cannot leave fields out of its answer, so the record comes back whole, trigger data included, once per run.
 */
export async function recordOpenEnd(models: Models, run: { id: string; createdAt: number }, progress: RunProgress): Promise<WrittenRun | null> {
  if (pastFirstPage(progress)) return readThenRecord(models, run, progress);
  const set = await progressSet(models, run.id, progress);
  const before = (await retryWhileBusy(() =>
    models.Run.collection.findOneAndUpdate({ _id: run.id as never, ...openFilter(run) }, { $set: set }, { returnDocument: 'before' }),
  )) as WrittenRun | null;
  return before && { _id: before._id, owner: before.owner, task_id: before.task_id, live_slot: before.live_slot, created_at: before.created_at, status: progress.status };
}

async function readThenRecord(models: Models, run: { id: string; createdAt: number }, progress: RunProgress): Promise<WrittenRun | null> {
  const current = await findOpenRecord(models, run);
  if (!current) return null;
  await recordProgress(models, run.id, progress);
  return { ...current, status: progress.status };
}

/** The conditions of an open record of `run` (besides its `_id`): not closed, and created when `run` was. */
const openFilter = (run: { createdAt: number }) => ({
  status: { $nin: [...TERMINAL] },
  ...(typeof run.createdAt === 'number' ? { created_at: new Date(run.createdAt) } : {}),
});

/**
 * `run`'s record while it is open (what a write of it needs to know); null when it is closed, gone, or another run
 * of the name (deleted and triggered again since).
 */
export async function findOpenRecord(models: Models, run: { id: string; createdAt: number }): Promise<WrittenRun | null> {
  const current = (await models.Run.collection.findOne({ _id: run.id as never }, { projection: WRITTEN_RUN })) as WrittenRun | null;
  if (!current || isTerminal(current.status) || (typeof run.createdAt === 'number' && current.created_at.getTime() !== run.createdAt)) return null;
  return current;
}

/** What a run's end's write read of the record, with the status it wrote: what announcing the close needs (webhook-start.ts). */
export type WrittenRun = Pick<RunRecord, '_id' | 'status' | 'owner' | 'task_id' | 'live_slot' | 'created_at'>;
export const WRITTEN_RUN = { status: 1, owner: 1, task_id: 1, live_slot: 1, created_at: 1 } as const;

/** Entries the record says are stored (records from before pages have them all in `results`). */
export const entryCount = (record: Pick<RunRecord, 'entry_count' | 'results'>): number => record.entry_count ?? record.results.length;

/** Entries [from, to) of a run as stored: contents may be references (run-content.ts resolves them). */
export function readEntries(models: Models, record: Pick<RunRecord, '_id' | 'results'>, from: number, to: number): Promise<HeldEntry[]> {
  return readPaged<HeldEntry>(models, record._id, 'e', record.results as HeldEntry[], from, to);
}

/** Messages [from, to) of a run's conversation as stored. */
export async function readMessages(models: Models, runId: string, from: number, to: number): Promise<Message[]> {
  const firstPage = from < to && from < PAGE_SIZE ? ((await models.Run.collection.findOne({ _id: runId as never }, { projection: { messages: 1 } }))?.messages ?? []) : [];
  return readPaged<Message>(models, runId, 'm', firstPage as Message[], from, to);
}

/**
 * Ends a run whose workflow closed without writing its end (terminated, timed out, gone): `error`, with `reason`
 * as its last entry. Only for a closed workflow (no other writer is left). `known`: the run's entries as this process
 * read them from the workflow (what its reads and streams showed, or what the closed workflow held), the first of them
 * the run's entry number `knownFrom`: those the record does not have are written before the reason, so the record
 * says what readers saw (none when the record lacks some before them). Returns false when the record was already
 * closed or is gone.
 */
export async function closeRun(models: Models, runId: string, reason: string, known: readonly HeldEntry[] = [], knownFrom = 0): Promise<boolean> {
  const record = await findRun(models, runId);
  if (!record || isTerminal(record.status)) return false;
  const entry: HeldEntry = { msg: reason, error: reason, lastMessage: { role: 'system', content: reason } };
  const from = entryCount(record);
  const missing = from >= knownFrom ? known.slice(from - knownFrom) : [];
  const set = await progressSet(models, runId, { status: 'error', modifiedAt: Date.now(), entries: { from, items: [...missing, entry] } });
  // Only while it is still open as read: a run's own end written meanwhile (a call finishing late) stands.
  const open = { _id: runId as never, ...openFilter({ createdAt: record.created_at.getTime() }) };
  const { matchedCount } = await retryWhileBusy(() => models.Run.collection.updateOne(open, { $set: set }));
  return matchedCount > 0;
}

/** Runs of a task, newest first (then by _id), a page after `page.cursor`. Throws 400 for a cursor not issued here. */
export async function listRuns(models: Models, task: { owner: string; profile: string; task: string }, page: PageRequest) {
  const q = keysetQuery({ owner: task.owner, profile: task.profile, task: task.task }, page, RUN_TIE_BREAKERS, -1);
  return q.finish(await models.Run.find(q.where).sort(q.sort).limit(q.limit).lean());
}

const RUN_TIE_BREAKERS = ['_id'];
/** The cursor of the run list's page after `record`. */
export const runCursor = (record: RunRecord) => keysetCursor(record, RUN_TIE_BREAKERS);

/** Notes a run whose workflow could not be started (Temporal did not answer), for the reconciler to start it. */
export async function deferStart(models: Models, runId: string, queue: string, at = new Date()): Promise<void> {
  await models.DeferredStart.collection.updateOne({ _id: runId as never }, { $setOnInsert: { queue, at } }, { upsert: true });
}

/** A queue's runs whose start was deferred, oldest first (a small collection: one document per failed start, until started). */
export function deferredStarts(models: Models, queue: string, limit: number): Promise<Array<{ _id: string; at: Date }>> {
  return models.DeferredStart.find({ queue }).sort({ at: 1 }).limit(limit).lean<Array<{ _id: string; at: Date }>>();
}

export async function clearDeferredStart(models: Models, runId: string): Promise<void> {
  await models.DeferredStart.collection.deleteOne({ _id: runId as never });
}
