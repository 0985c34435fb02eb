import mongoose, { type Types } from 'mongoose';
import type { TraceRef } from '../telemetry/trace-id';
import type { HeldEntry, Message, ReplayOverrides, ReplayTools, RunIdentity, RunRef, RunStatus, RunUsage } from '../contract/types';
import { isTerminal, runWorkflowId, TERMINAL } from '../contract/constants';
import { isDuplicateKey, retryWhileBusy } from './connect';
import { cursorKey, keysetCursor, keysetQuery, type PageRequest } from './keyset';
import type { Models } from './models';
import { PAGE_SIZE, readPaged, writePages, type PageVersions } from './run-content';

const { BSON } = mongoose.mongo;

/**
 * The run record: one document per run, `_id` = the run's identity = its workflow id (contract/constants.ts
 * runWorkflowId). Inserted by the trigger; every write after that goes through the recorder (src/runs/recorder.ts),
 * conditional on the record found by `_id`.
 */
export { runWorkflowId };

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
  /** A replay's fields (src/replays/create.ts): the run it replays and how, the eval that made it. */
  replay?: ReplayFields;
  /** Where the trigger is in its trace, when the API traces. */
  trace?: TraceRef;
}

/** What a replay's record holds beyond any run's (models.ts `replay`, `eval`). */
export interface ReplayFields {
  replay: { of: string; of_id: string; of_created_at: Date; tools: ReplayTools; overrides: ReplayOverrides };
  eval?: string;
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
    ...(run.replay ? { replay: run.replay.replay, ...(run.replay.eval !== undefined ? { eval: run.replay.eval } : {}) } : {}),
    ...(run.trace ? { trace_id: run.trace.traceId, trace_span_id: run.trace.spanId } : {}),
    created_at: run.at,
    modified_at: run.at,
  };
  await retryWhileBusy(() => models.Run.collection.insertOne(doc as never));
  return doc as RunRecord;
}

/** What a write of a run adds: its status, and the entries and messages the store does not have yet. */
export interface RunProgress {
  status: RunStatus;
  modifiedAt: number;
  entries: { from: number; items: HeldEntry[] };
  messages?: { from: number; items: Message[] };
  /** The run's usage so far (tokens, model and tool calls). */
  usage?: RunUsage;
}

/**
 * The condition of a write of a run record, on fields of the document found by `_id`: FerretDB looks it up by its
 * `_id` index and applies the rest to it (scripts/install-tools.sh), MongoDB makes the check and the write one atomic
 * step. `open`: not `ready` nor `error`; `createdAt`: this run of the name, not another (deleted and triggered again
 * since); `entryCount`: no other write has added entries since it was read.
 */
export interface RecordCondition {
  open: true;
  createdAt: number;
  entryCount?: number;
}

/** The filter of a conditional write: `_id` first, then the condition's fields. */
export const conditionFilter = (runId: string, condition: RecordCondition) => ({
  _id: runId as never,
  status: { $nin: [...TERMINAL] },
  created_at: new Date(condition.createdAt),
  ...(condition.entryCount !== undefined ? { entry_count: condition.entryCount } : {}),
});

/** Whether a write reaches past the record's own page (it then writes `run_pages` documents too). */
export const pastFirstPage = ({ entries, messages }: RunProgress) =>
  entries.from + entries.items.length > PAGE_SIZE || (messages !== undefined && messages.from + messages.items.length > PAGE_SIZE);

/**
 * Writes the pages of `progress` past the first and returns the record's `$set` (the first page's items among it, the
 * status, the count), for `updateRunIf`: pages go first, so a record never counts an entry the store does not have.
 */
export async function progressSet(models: Models, runId: string, progress: RunProgress, versions: PageVersions = {}): Promise<Record<string, unknown>> {
  const { entries, messages } = progress;
  return {
    ...(await writePages(models, runId, 'e', entries.from, entries.items, versions)),
    ...(messages ? await writePages(models, runId, 'm', messages.from, messages.items, versions) : {}),
    status: progress.status,
    modified_at: new Date(progress.modifiedAt),
    entry_count: entries.from + entries.items.length,
    started: true,
    ...(progress.usage ? { usage: progress.usage } : {}),
  };
}

/** One conditional update of a run record; false when the condition did not hold (nothing written). */
export async function updateRunIf(models: Models, runId: string, condition: RecordCondition, set: Record<string, unknown>): Promise<boolean> {
  const { matchedCount } = await retryWhileBusy(() => models.Run.collection.updateOne(conditionFilter(runId, condition), { $set: set }));
  return matchedCount > 0;
}

/**
 * One conditional find-and-update of a run record, giving back what announcing its close needs (the record as it was,
 * with the status written), or null when the condition did not hold. FerretDB cannot leave fields out of its answer,
 * so the record comes back whole, trigger data included: for a run's end only, once per run.
 */
export async function updateRunIfReturning(models: Models, runId: string, condition: RecordCondition, set: Record<string, unknown>): Promise<WrittenRun | null> {
  const before = (await retryWhileBusy(() =>
    models.Run.collection.findOneAndUpdate(conditionFilter(runId, condition), { $set: set }, { returnDocument: 'before' }),
  )) as WrittenRun | null;
  return before && { _id: before._id, owner: before.owner, task_id: before.task_id, live_slot: before.live_slot, created_at: before.created_at, status: set.status as RunStatus };
}

/**
 * Claims the end of `run` (this run of the name) with the record's update `set`: the first claim of a run wins, by its
 * unique `_id`. Returns `won`, or the claim already there (its update, which may be this very one made again).
 */
export async function claimRunEnd(models: Models, run: RunRef, set: Record<string, unknown>): Promise<'won' | { set: Record<string, unknown>; same: boolean }> {
  // The update as BSON (its keys have dots, which a stored document's may not): cheaper to make than EJSON.
  const encoded = BSON.serialize(set);
  const _id = `${run.id}@${run.createdAt}`;
  try {
    await retryWhileBusy(() => models.RunEnd.collection.insertOne({ _id: _id as never, run: run.id, set: new BSON.Binary(encoded), at: new Date() }));
    return 'won';
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const claim = await models.RunEnd.collection.findOne({ _id: _id as never });
  if (!claim) throw new Error(`the end of run ${run.id} was claimed, and its claim is gone (the run deleted meanwhile)`);
  const stored = (claim.set as InstanceType<typeof BSON.Binary>).buffer;
  return { set: BSON.deserialize(stored) as Record<string, unknown>, same: Buffer.compare(Buffer.from(stored), Buffer.from(encoded)) === 0 };
}

/** The update of the run's claimed end (claimRunEnd), or null when no end of the run was claimed. */
export async function findClaimedEnd(models: Models, run: RunRef): Promise<Record<string, unknown> | null> {
  const claim = await models.RunEnd.collection.findOne({ _id: `${run.id}@${run.createdAt}` as never });
  return claim && (BSON.deserialize((claim.set as InstanceType<typeof BSON.Binary>).buffer) as Record<string, unknown>);
}

/** What a write needs to know of a record (by `_id`, a few fields): null when there is none. */
export async function findRecordState(models: Models, runId: string): Promise<RecordState | null> {
  return (await models.Run.collection.findOne({ _id: runId as never }, { projection: RECORD_STATE })) as RecordState | null;
}
const RECORD_STATE = { status: 1, owner: 1, task_id: 1, live_slot: 1, created_at: 1, entry_count: 1, page_versions: 1 } as const;
export type RecordState = WrittenRun & { entry_count: number; page_versions?: PageVersions };

/**
 * The explain of a conditional write's filter (what FerretDB or MongoDB would do to find the record): for the test
 * that checks the recorder's conditions use the `_id` index.
 */
export async function explainCondition(models: Models, runId: string, condition: RecordCondition): Promise<Record<string, unknown>> {
  return (await models.Run.collection.find(conditionFilter(runId, condition)).explain()) as Record<string, unknown>;
}

/**
 * `run`'s record while it is open (what a write of it needs to know); null when it is closed, gone, or another run
 * of the name (deleted and triggered again since).
 */
export async function findOpenRecord(models: Models, run: RunRef): Promise<WrittenRun | null> {
  const current = (await models.Run.collection.findOne({ _id: run.id as never }, { projection: WRITTEN_RUN })) as WrittenRun | null;
  if (!current || isTerminal(current.status) || current.created_at.getTime() !== run.createdAt) return null;
  return current;
}

/** What a run's end's write read of the record, with the status it wrote: what announcing the close needs (runs/announce.ts). */
export type WrittenRun = Pick<RunRecord, '_id' | 'status' | 'owner' | 'task_id' | 'live_slot' | 'created_at'>;
export const WRITTEN_RUN = { status: 1, owner: 1, task_id: 1, live_slot: 1, created_at: 1 } as const;

/** Entries the record says are stored. */
export const entryCount = (record: Pick<RunRecord, 'entry_count'>): number => record.entry_count;

/** Entries [from, to) of a run as stored: contents may be references (run-content.ts resolves them). */
export function readEntries(models: Models, record: Pick<RunRecord, '_id' | 'results' | 'page_versions'>, from: number, to: number): Promise<HeldEntry[]> {
  return readPaged<HeldEntry>(models, record._id, 'e', record.results as HeldEntry[], from, to, (record.page_versions ?? {}) as PageVersions);
}

/** Messages [from, to) of a run's conversation as stored. */
export async function readMessages(models: Models, runId: string, from: number, to: number): Promise<Message[]> {
  if (to <= from) return [];
  const record = await models.Run.collection.findOne({ _id: runId as never }, { projection: { messages: 1, page_versions: 1 } });
  return readPaged<Message>(models, runId, 'm', (record?.messages ?? []) as Message[], from, to, (record?.page_versions ?? {}) as PageVersions);
}

/** A run to delete: its record's `_id` (= workflow id) and creation time (which tells it from a later run of the name). */
export type RunToDelete = Pick<RunRecord, '_id' | 'created_at'>;

/** Up to `limit` closed runs last changed before `before` (ids and creation times: FerretDB scans `runs` for this filter). */
export function findExpiredRuns(models: Models, before: Date, limit: number): Promise<RunToDelete[]> {
  return models.Run.find({ status: { $in: TERMINAL }, modified_at: { $lt: before } }, { _id: 1, created_at: 1 }).limit(limit).lean<RunToDelete[]>();
}

/** Deletes a run's record (its contents first: run-content.ts deleteRunContent). */
export async function deleteRunRecord(models: Models, runId: string): Promise<void> {
  await retryWhileBusy(() => models.Run.collection.deleteOne({ _id: runId as never }));
}

/**
 * Runs of a task (only those in `statuses` when given), newest first (then by _id), a page after `page.cursor`.
 * Throws 400 for a cursor not issued here. On MongoDB the task's index gives the order and the status is checked on
 * the runs it yields; FerretDB scans `runs` for any filter but `_id` (docs/runs.md, "Reading").
 */
/**
 * A task's runs, newest first. `replays: false` leaves out replays (runs with a `replay` field): one more condition on
 * the same index's scan (owner, profile, task, created_at), no other index needed.
 */
export async function listRuns(models: Models, task: { owner: string; profile: string; task: string }, page: PageRequest, statuses?: readonly RunStatus[], options: { replays?: boolean } = {}) {
  const status = statuses === undefined ? {} : { status: statuses.length === 1 ? statuses[0] : { $in: statuses } };
  const replays = options.replays === false ? { replay: { $exists: false } } : {};
  const filter = { owner: task.owner, profile: task.profile, task: task.task, ...status, ...replays };
  const q = keysetQuery(filter, { limit: page.limit }, RUN_TIE_BREAKERS, -1);
  const find = (where: Record<string, unknown>, limit: number) => models.Run.find(where).sort(q.sort).limit(limit).lean();
  if (!page.cursor) return q.finish(await find(filter, q.limit));
  // After a cursor: the runs of its time after its `_id`, then the older ones. Two queries of equalities and a range
  // on the index's fields, where one `$or` of both would make FerretDB read the whole task (docs/ferretdb.md).
  const [at, id] = cursorKey(page.cursor, RUN_TIE_BREAKERS);
  const ties = await find({ ...filter, created_at: at, _id: { $lt: id } }, q.limit);
  const older = ties.length < q.limit ? await find({ ...filter, created_at: { $lt: at } }, q.limit - ties.length) : [];
  return q.finish([...ties, ...older]);
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
