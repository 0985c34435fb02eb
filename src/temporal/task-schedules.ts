import { status as grpcStatus } from '@grpc/grpc-js';
import {
  isGrpcServiceError,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  ServiceError,
  type Client,
  type ScheduleDescription,
  type ScheduleDescriptionStartWorkflowAction,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import type { Config } from '../config';
import { unavailableDependency } from '../dependencies';
import { badRequest, conflict } from '../errors';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { claimSchedulePlace, placedScheduleNames, releaseSchedulePlace, releaseSchedulePlaces } from '../store/schedules';
import { scheduledRunName, WORKFLOW, type ScheduledRunInput, type ScheduledRunWorkflow } from '../contract/messages';
import { scheduledRunWorkflowId, taskScheduleId, type TaskScheduleRef } from './ids';
import { OWNER, PROFILE, TASK } from './search-attributes';

/**
 * A task's schedules: Temporal Schedules (the Web UI's Schedules page) whose action is `scheduledRun`
 * (workflows/scheduled-run.ts). Temporal holds each schedule; which schedules a task has is kept twice, so a list
 * reads both and never scans every user's: a place per schedule in the store (store/schedules.ts, read by `_id`,
 * read-your-writes, and what bounds their number), and the schedules' search attributes `Owner`, `Profile`, `Task`
 * (Temporal's visibility, which also lists schedules made before places).
 */

export type TaskOf = Omit<TaskScheduleRef, 'schedule'>;
type Deps = { models: Models; temporal: Client };

/** When a schedule acts: exactly one of a cron expression (Temporal's syntax) or an interval (`30s`, `5m`, `1h`, `1d`). */
export interface ScheduleSettings {
  cron?: string;
  every?: string;
  /** An IANA time zone name, for cron (`UTC` when absent). */
  timezone?: string;
  paused: boolean;
  /** The trigger data of every run it starts. */
  payload: Record<string, unknown>;
}

/** A schedule as it is read. */
export interface TaskSchedule {
  name: string;
  cron?: string;
  every?: string;
  /** With `cron` only: an interval does not depend on one. */
  timezone?: string;
  paused: boolean;
  payload: Record<string, unknown>;
  /** None while paused (Temporal computes them as if it were not). */
  nextActionTimes: Date[];
  /** The runs of its latest actions (a run whose task was gone at that time does not exist). */
  recentRuns: Array<{ run: string; scheduledAt: Date }>;
  createdAt: Date;
  /** Its last PUT (its creation until a PUT changes it). */
  modifiedAt: Date;
}

/** Schedules one task may have: a list describes each of them. */
export const MAX_SCHEDULES_PER_TASK = 20;
/** An action missed by longer than this (Temporal was down) is skipped rather than run late. */
const CATCHUP_WINDOW_MS = 60 * 60_000;
const NEXT_ACTION_TIMES = 3;

const EVERY = /^([1-9][0-9]{0,5})(s|m|h|d)$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MAX_EVERY_MS = 366 * UNIT_MS.d;
export const EVERY_RULE = 'a whole number of seconds, minutes, hours or days, e.g. "30s", "5m", "1h", "1d" (at most 366d)';

/** `30s` → 30000; undefined when it does not follow EVERY_RULE. */
export function everyMs(every: string): number | undefined {
  const m = EVERY.exec(every);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms <= MAX_EVERY_MS ? ms : undefined;
}

/** The canonical name of an IANA time zone (`europe/paris` → `Europe/Paris`), or undefined when there is none. */
export function canonicalTimeZone(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

const taskKey = (t: TaskOf) => `${t.owner}/${t.profile}/${t.task}`;

/** The names that hold a place, and those Temporal's visibility finds; in order, once each. */
async function scheduleNames(deps: Deps, t: TaskOf): Promise<string[]> {
  const [placed, visible] = await Promise.all([placedScheduleNames(deps.models, t, MAX_SCHEDULES_PER_TASK), visibleNames(deps.temporal, t)]);
  return [...new Set([...placed, ...visible])].sort();
}

async function visibleNames(temporal: Client, t: TaskOf): Promise<string[]> {
  const query = `${OWNER.name} = ${quote(t.owner)} AND ${PROFILE.name} = ${quote(t.profile)} AND ${TASK.name} = ${quote(t.task)}`;
  const prefix = taskScheduleId({ ...t, schedule: '' });
  const names: string[] = [];
  for await (const s of temporal.schedule.list({ query })) {
    if (s.scheduleId.startsWith(prefix)) names.push(s.scheduleId.slice(prefix.length));
  }
  return names;
}

const quote = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * Creates the schedule, or replaces its settings (`created: false`). The name takes its place first, so a schedule
 * never exists unlisted. Throws 400 naming `cron` or `timezone` when Temporal refuses them, 409
 * `too_many_schedules` past MAX_SCHEDULES_PER_TASK.
 */
export async function putTaskSchedule(deps: Deps & { config: Pick<Config, 'TEMPORAL_TASK_QUEUE'> }, ref: TaskScheduleRef, settings: ScheduleSettings): Promise<{ created: boolean }> {
  const { models, temporal } = deps;
  const key = taskKey(ref);
  if ((await claimSchedulePlace(models, ref, ref.schedule, MAX_SCHEDULES_PER_TASK)) === 'refused') {
    throw conflict(`task "${ref.profile}/${ref.task}" has ${MAX_SCHEDULES_PER_TASK} schedules, the most it may have`, 'too_many_schedules');
  }

  const scheduleId = taskScheduleId(ref);
  const input: ScheduledRunInput = { owner: ref.owner, profile: ref.profile, task: ref.task, schedule: ref.schedule, payload: settings.payload };
  const timing = settings.cron !== undefined ? { cronExpressions: [settings.cron] } : { intervals: [{ every: everyMs(settings.every ?? '') ?? 0 }] };
  const spec = { ...timing, timezone: (settings.timezone && canonicalTimeZone(settings.timezone)) || 'UTC' };
  const searchAttributes = [
    { key: OWNER, value: ref.owner },
    { key: PROFILE, value: ref.profile },
    { key: TASK, value: ref.task },
  ];
  const action: ScheduleOptionsStartWorkflowAction<ScheduledRunWorkflow> = {
    type: 'startWorkflow',
    workflowType: WORKFLOW.scheduled,
    workflowId: scheduledRunWorkflowId(ref),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    // The timing as it was given: Temporal reads a cron expression back only as calendar ranges.
    memo: { task: key, schedule: ref.schedule, ...(settings.cron !== undefined ? { cron: settings.cron } : { every: settings.every }) },
    typedSearchAttributes: searchAttributes,
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW_MS };
  try {
    try {
      await temporal.schedule.create({ scheduleId, spec, action, policies, state: { paused: settings.paused }, memo: { task: key }, typedSearchAttributes: searchAttributes });
      return { created: true };
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    }
    await temporal.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action, policies, state: { ...previous.state, paused: settings.paused } }));
    return { created: false };
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    // Temporal refused the spec ("Invalid schedule spec: ..."): a new name it never held is dropped again.
    if (!(await describe(temporal, scheduleId))) await unlist(models, ref);
    throw badRequest(`${/time ?zone/i.test(err.message) ? 'timezone' : settings.cron !== undefined ? 'cron' : 'every'}: ${err.message}`);
  }
}

const unlist = (models: Models, ref: TaskScheduleRef) => releaseSchedulePlace(models, ref, ref.schedule, MAX_SCHEDULES_PER_TASK);

/** Temporal's answer to a call on a schedule that does not exist (the SDK maps describe's and delete's; not every call's). */
const isNotFound = (err: unknown) =>
  err instanceof ScheduleNotFoundError || (err instanceof ServiceError && isGrpcServiceError(err.cause) && err.cause.code === grpcStatus.NOT_FOUND);

/** Looks again after a Temporal error other than "not found": a schedule deleted as it is described may end so. */
const DESCRIBE_TRIES = 3;
const DESCRIBE_PAUSE_MS = 100;

/**
 * The schedule, or null when there is none, including one deleted while it is described. Throws what says Temporal
 * did not answer (a 503), and any other error that persists over DESCRIBE_TRIES.
 */
async function describe(temporal: Client, scheduleId: string): Promise<ScheduleDescription | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await temporal.schedule.getHandle(scheduleId).describe();
    } catch (err) {
      if (isNotFound(err)) return null;
      if (attempt >= DESCRIBE_TRIES || unavailableDependency(err)) throw err;
    }
    await new Promise((r) => setTimeout(r, DESCRIBE_PAUSE_MS * attempt));
  }
}

/** One schedule of the task, or null when there is none. */
export async function readTaskSchedule(deps: Deps, ref: TaskScheduleRef): Promise<TaskSchedule | null> {
  const d = await describe(deps.temporal, taskScheduleId(ref));
  if (!d || d.action.type !== 'startWorkflow') return null;
  const action = d.action as ScheduleDescriptionStartWorkflowAction;
  const input = (action.args?.[0] ?? {}) as Partial<ScheduledRunInput>;
  const memo = (action.memo ?? {}) as { cron?: string; every?: string };
  return {
    name: ref.schedule,
    ...(memo.cron !== undefined ? { cron: memo.cron, timezone: d.spec.timezone || 'UTC' } : { every: memo.every }),
    paused: d.state.paused,
    payload: input.payload ?? {},
    nextActionTimes: d.state.paused ? [] : d.info.nextActionTimes.slice(0, NEXT_ACTION_TIMES),
    recentRuns: d.info.recentActions.map((a) => ({ run: scheduledRunName(ref.schedule, a.scheduledAt), scheduledAt: a.scheduledAt })),
    createdAt: d.info.createdAt,
    modifiedAt: d.info.lastUpdatedAt ?? d.info.createdAt,
  };
}

/** The task's schedules, by name. */
export async function listTaskSchedules(deps: Deps, t: TaskOf): Promise<TaskSchedule[]> {
  const names = await scheduleNames(deps, t);
  const read = await Promise.all(names.map((schedule) => readTaskSchedule(deps, { ...t, schedule })));
  return read.filter((s): s is TaskSchedule => s !== null);
}

/** Deletes one schedule (its running action, if any, still waits for its run). false when there was none. */
export async function deleteTaskSchedule(deps: Deps, ref: TaskScheduleRef): Promise<boolean> {
  let deleted = true;
  try {
    await deps.temporal.schedule.getHandle(taskScheduleId(ref)).delete();
  } catch (err) {
    // Another error than "not found" from a schedule that is gone after it: another delete took it meanwhile.
    if (!isNotFound(err) && (unavailableDependency(err) || (await describe(deps.temporal, taskScheduleId(ref))))) throw err;
    deleted = false;
  }
  await unlist(deps.models, ref);
  return deleted;
}

/**
 * Deletes every schedule of a deleted task. One Temporal cannot delete (unreachable) is logged and keeps its place, so a later delete of the task (or of the schedule) finds it; its actions find no task
 * and start nothing.
 */
export async function deleteTaskSchedules(deps: Deps & { logger: Logger }, t: TaskOf): Promise<number> {
  try {
    const names = await scheduleNames(deps, t);
    const outcomes = await Promise.allSettled(names.map((schedule) => deleteTaskSchedule(deps, { ...t, schedule })));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
    await releaseSchedulePlaces(deps.models, t, MAX_SCHEDULES_PER_TASK);
    return outcomes.filter((o) => o.status === 'fulfilled' && o.value).length;
  } catch (err) {
    deps.logger.warn({ task: taskKey(t), reason: String(err) }, 'deleted task: some of its schedules could not be deleted');
    return 0;
  }
}
