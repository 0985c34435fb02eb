/**
 * The workflows' names, inputs and messages: how the API, the activities and Temporal's tools address a workflow,
 * without importing its code (the workflows import this, never the reverse: no import circle through them).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ApprovalDecision, AskedInput, CancelRequest, InputAnswer, InputState, RunInput, RunOutcome, RunQueryInput, RunSnapshot } from './types';

/** Every workflow type the workers run, by the name Temporal knows it by (the function's name in workflows/). */
export const WORKFLOW = {
  run: 'runTask',
  reconcile: 'reconcileRuns',
  retain: 'retainRuns',
  webhook: 'deliverWebhook',
  scheduled: 'scheduledRun',
  ping: 'ping',
  eval: 'runEval',
} as const;

/** The live run, a bounded view of it: `{ from }` asks for the entries from that index on. */
export const runQuery = defineQuery<RunSnapshot, [RunQueryInput?]>('run');

/** `POST <run path>/cancel`: stops the run (the call in flight too); it ends `error`, "cancelled by <user>". */
export const cancelSignal = defineSignal<[CancelRequest]>('cancel');

/**
 * `POST <run path>/approvals/:id`: decides a tool call waiting for approval. Rejected (nothing changes) for an id
 * the run never asked about or one already decided: the failure's type is in APPROVAL_FAILURE (failures.ts).
 */
export const approvalUpdate = defineUpdate<void, [ApprovalDecision]>('approval');

/**
 * The run's MCP call activity: its server asks a person something (docs/mcp.md, "Inputs"). The run records the
 * question (status `pending`) before the update completes. Rejected (type in INPUT_FAILURE) when the run is closing.
 */
export const inputAskUpdate = defineUpdate<void, [AskedInput]>('inputAsk');

/**
 * `POST <run path>/inputs/:id` (and the call activity, when its call ended first): answers a question the run asked.
 * Rejected (nothing changes) for an id the run never asked or one already answered: the type is in INPUT_FAILURE.
 */
export const inputUpdate = defineUpdate<void, [InputAnswer]>('input');

/** A question the run asked and its answer once given (null for an id it never asked): the activity polls it. */
export const inputStateQuery = defineQuery<InputState | null, [string]>('inputState');

/** An eval's workflow id (docs/evals.md): unique per task and eval id, like a run's. */
export const evalWorkflowId = (e: { owner: string; profile: string; task: string; id: string }) => `eval:${e.owner}/${e.profile}/${e.task}/${e.id}`;

/** An eval (workflows/eval.ts): its record's _id (= its workflow id) and how many replays may be live at once. */
export interface EvalInput {
  evalId: string;
  concurrency: number;
  /** How many items it has (one per original and variant), each addressed by its index. */
  items: number;
}

/** `POST <task path>/evals/:id/cancel`: stops starting replays, cancels those not ended, ends the eval `cancelled`. */
export const evalCancelSignal = defineSignal<[{ by: string }]>('cancelEval');

/** An eval of a task (workflows/eval.ts). */
export type RunEvalWorkflow = (input: EvalInput) => Promise<string>;

/** One run of a task (workflows/run-task.ts). */
export type RunTaskWorkflow = (input: RunInput) => Promise<RunOutcome>;

/** One run's completion webhook (workflows/webhook-delivery.ts): started when the run closes, apart from the run. */
export interface WebhookDeliveryInput {
  /** The run record's _id (= the run's workflow id). */
  runId: string;
  /** The record's creation time: a run deleted and triggered again under its name is another delivery. */
  createdAt: number;
  /** WEBHOOK_RETRY_INITIAL_MS and WEBHOOK_RETRY_HOURS of the process that started the delivery. */
  retry: { initialMs: number; hours: number };
}

/** A delivery's end: delivered (the receiver's 2xx), or not and why (nothing to deliver, or given up). */
export interface WebhookOutcome {
  delivered: boolean;
  status?: number;
  reason?: string;
}
export type DeliverWebhookWorkflow = (input: WebhookDeliveryInput) => Promise<WebhookOutcome>;

/** The reconciler (workflows/reconcile.ts), one per task queue. */
export type ReconcileRunsWorkflow = (input: { taskQueue: string }) => Promise<{ ended: number; started: number }>;

/** One batch of the retention pass: closed runs last changed before `before` (ms since the epoch), at most `limit`. */
export interface RunRetentionBatch {
  before: number;
  limit: number;
}
/** The retention pass (workflows/retention.ts). */
export type RetainRunsWorkflow = (input: { retentionMs: number }) => Promise<{ deleted: number }>;

/** What a task's schedule starts (workflows/scheduled-run.ts): the run's task and trigger data (src/temporal/task-schedules.ts makes it). */
export interface ScheduledRunInput {
  owner: string;
  profile: string;
  task: string;
  schedule: string;
  payload: Record<string, unknown>;
}
export type ScheduledRunWorkflow = (input: ScheduledRunInput) => Promise<{ run: string; status: string }>;

/** Set by Temporal on the workflows a schedule starts: the action's scheduled time. */
export const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * A scheduled run's name: `<schedule>-<time as 20261123T083000Z>`. The same time gives the same name, so a retried
 * action (or a manual trigger in the same second) never makes a second run.
 */
export const scheduledRunName = (schedule: string, at: Date) => `${schedule}-${at.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
