import crypto from 'node:crypto';
import type { Types } from 'mongoose';
import type { CheckResult } from '../evals/checks';
import { keysetCursor, keysetQuery, cursorKey, type PageRequest } from './keyset';
import type { Models } from './models';

/** An eval's statuses: `pending` until its workflow starts, `ready` once scored, `error`/`cancelled` otherwise. */
export const EVAL_STATUSES = ['pending', 'running', 'ready', 'error', 'cancelled'] as const;
export type EvalStatus = (typeof EVAL_STATUSES)[number];
export const evalEnded = (status: string) => status === 'ready' || status === 'error' || status === 'cancelled';

/** One replay of an eval: an original run under one variant. */
export interface EvalItem {
  variant: string;
  /** The original run's name and _id. */
  original: string;
  original_id: string;
  /** The replay's run name, `<eval>.<variant>.<original>`. */
  run: string;
  /** Written when the eval is scored. */
  checks?: CheckResult[];
}

/** What an eval was asked (POST <task path>/evals, as validated). */
export interface EvalSpec {
  variants: Array<{ name: string; model?: string; runner?: string; prompt?: string }>;
  tools: 'recorded' | 'recorded_then_live';
  checks: unknown[];
  concurrency: number;
}

export interface EvalRecord {
  _id: string;
  id: string;
  owner: string;
  profile: string;
  task: string;
  task_id: Types.ObjectId;
  spec: EvalSpec;
  status: EvalStatus;
  reason?: string;
  items: EvalItem[];
  created_at: Date;
  modified_at: Date;
}

/** A new eval's short id: 6 lowercase letters and digits (it starts its runs' names, so it is kept short). */
export const newEvalId = () => `e${crypto.randomBytes(4).readUInt32BE(0).toString(36).padStart(7, '0').slice(-5)}`;

export async function insertEval(models: Models, record: Omit<EvalRecord, 'modified_at'>): Promise<void> {
  await models.Eval.collection.insertOne({ ...record, modified_at: record.created_at } as never);
}

export function findEval(models: Models, _id: string): Promise<EvalRecord | null> {
  return models.Eval.findById(_id).lean<EvalRecord>();
}

/**
 * The eval's one writer after its insert is its workflow (activities/evals.ts) — and the cancel of an eval whose
 * workflow is gone. A status written once ended is never changed again.
 */
export async function setEvalStatus(models: Models, _id: string, status: EvalStatus, extra: { reason?: string; items?: EvalItem[] } = {}): Promise<boolean> {
  const res = await models.Eval.collection.updateOne(
    { _id: _id as never, status: { $nin: ['ready', 'error', 'cancelled'] } },
    { $set: { status, modified_at: new Date(), ...extra } },
  );
  return res.modifiedCount === 1;
}

export async function deleteEval(models: Models, _id: string): Promise<boolean> {
  return (await models.Eval.collection.deleteOne({ _id: _id as never })).deletedCount === 1;
}

/** A task's evals, newest first, in pages (the runs list's keyset, on the same index shape). */
export async function listEvals(models: Models, task: { owner: string; profile: string; task: string }, page: PageRequest) {
  const filter = { owner: task.owner, profile: task.profile, task: task.task };
  const q = keysetQuery(filter, { limit: page.limit }, TIE_BREAKERS, -1);
  const find = (where: Record<string, unknown>, limit: number) => models.Eval.find(where).sort(q.sort).limit(limit).lean<EvalRecord[]>();
  if (!page.cursor) return q.finish(await find(filter, q.limit));
  const [at, id] = cursorKey(page.cursor, TIE_BREAKERS);
  const ties = await find({ ...filter, created_at: at, _id: { $lt: id } }, q.limit);
  const older = ties.length < q.limit ? await find({ ...filter, created_at: { $lt: at } }, q.limit - ties.length) : [];
  return q.finish([...ties, ...older]);
}

const TIE_BREAKERS = ['_id'];
export const evalCursor = (record: EvalRecord) => keysetCursor(record, TIE_BREAKERS);
