import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { TaskRecord } from '../store/tasks';
import type { Config } from '../config';
import { isDuplicateKey } from '../store/connect';
import { claimLiveRun, releaseLiveRun } from '../store/live-runs';
import { liveRunsLimited } from '../errors';
import type { Models } from '../store/models';
import { createRecord, recordOutsideEnd } from './recorder';
import { deferStart, findRun, recordIdentity, runWorkflowId, type ReplayFields, type RunRecord } from '../store/runs';
import { unavailableDependency } from '../dependencies';
import { WORKFLOW, type RunTaskWorkflow } from '../contract/messages';
import type { RunIdentity, RunInput } from '../contract/types';
import { describeRunExecution, ranEarlierRecord, RECORD_CREATED_MEMO } from './executions';
import { OWNER, PROFILE, RUNNER, TASK } from '../temporal/search-attributes';
import { ownerWeight, runPriority, TASK_PRIORITY, type RunOrigin } from './priority';
import { admitNewRun } from './admission';
import { admitWaitingSoon } from './announce';
import type { Logger } from '../logger';
import { createKeyedLimiter } from './keyed-limiter';
import { isWaitingStart } from '../store/waiting-starts';
import { FAIRNESS_WEIGHT } from '../store/user-weights';
import { findTask } from '../store/tasks';
import { currentTrace, inTrace } from '../telemetry/trace-id';

/** What starting a run needs of its task (not store/tasks.ts's TaskForRun, which only names a task). */
export type TaskForRun = Pick<TaskRecord, '_id' | 'owner' | 'profile' | 'name' | 'runner' | 'model' | 'version' | 'limits' | 'priority'>;
type StartDeps = { models: Models; temporal: Client; config: Config; logger: Logger };

/**
 * Creates the run and starts its workflow, at most once per name. The record, unique on the run's identity, is
 * inserted first: it is what keeps a name from running twice after Temporal has forgotten a closed workflow. A
 * trigger that finds the record but no confirmed start (a crash between insert and start, or a concurrent trigger
 * still starting) starts the workflow from the record: the start is idempotent by workflow id.
 * Returns `created: false` when the name was used before (the caller answers 200 with the same URL).
 * `origin`: what started it, for its priority (priority.ts). `replay`: the fields a replay's record holds
 * (src/replays/create.ts); the record's `replay` then tells its workflow to read them (RunInput `replay`).
 */
export async function triggerRun(
  deps: StartDeps,
  task: TaskForRun,
  run: string,
  payload: Record<string, unknown>,
  origin: RunOrigin = 'trigger',
  replay?: ReplayFields,
): Promise<{ created: boolean }> {
  const limit = deps.config.TRIGGERS_AT_ONCE_PER_USER;
  if (limit === 0) return recordAndStart(deps, task, run, payload, origin, replay);
  let limiter = ownerLimiters.get(deps.config);
  if (!limiter) ownerLimiters.set(deps.config, (limiter = createKeyedLimiter(limit)));
  return limiter(task.owner, () => recordAndStart(deps, task, run, payload, origin, replay));
}

/**
 * TRIGGERS_AT_ONCE_PER_USER: one owner's triggers a process works on at once (one limiter per process's config); the
 * rest wait in the process, in order. A flood of one user's triggers then holds a few of the store's writes at a time,
 * not hundreds, and another user's trigger is not queued behind them in the database.
 */
const ownerLimiters = new WeakMap<Config, ReturnType<typeof createKeyedLimiter>>();

async function recordAndStart(deps: StartDeps, task: TaskForRun, run: string, payload: Record<string, unknown>, origin: RunOrigin, replay?: ReplayFields): Promise<{ created: boolean }> {
  const identity: RunIdentity = { owner: task.owner, profile: task.profile, task: task.name, run };
  const limit = deps.config.LIVE_RUNS_PER_USER;
  const runId = runWorkflowId(identity);
  let record: RunRecord | null = null;
  let created = false;
  // A place among the owner's live runs first (store/live-runs.ts); without one, only a run that exists is answered.
  const claim = limit > 0 ? await claimLiveRun(deps.models, { runId, owner: task.owner, limit, staleMs: liveRunLifetimeMs(deps.config) }) : undefined;
  if (claim === 'refused') {
    record = await findRun(deps.models, identity);
    if (!record) throw liveRunsLimited(limit);
  } else {
    try {
      record = await createRecord(deps.models, { identity, taskId: task._id, taskVersion: task.version, runner: task.runner, payload, at: new Date(), liveSlot: claim?.slot, replay, trace: currentTrace() });
      created = true;
    } catch (err) {
      const place = claim && { runId, owner: task.owner, slot: claim.slot };
      if (!isDuplicateKey(err)) {
        // The store failed, and the insert may still have landed (a write that timed out): then the run holds this
        // place. It goes back only once the store says there is no such run; if it cannot say, it goes stale.
        if (place) await findRun(deps.models, identity).then((landed) => (landed ? undefined : releaseLiveRun(deps.models, place))).catch(() => undefined);
        throw err;
      }
      // The name is taken: that run holds its own place (if it is live), not this one.
      if (place) await releaseLiveRun(deps.models, place).catch(() => undefined);
      record = await findRun(deps.models, identity);
      if (!record) throw err; // deleted in between: let the caller see a failure rather than a phantom run
    }
  }
  // No worker has recorded the run yet: start it (again). Starting is idempotent by workflow id, and this API never
  // writes the record after inserting it (the workflow is its only writer; see models.ts). A run waiting for a place
  // among its owner's started runs is not started here (admission.ts): one of its owner's runs ending starts it.
  if (!record.started && record.status === 'pending') {
    if (created) {
      const priority = runPriority({ owner: task.owner, weight: FAIRNESS_WEIGHT.default, taskPriority: task.priority, origin }).priorityKey ?? TASK_PRIORITY.default;
      const admitted = await admitNewRun(deps, { runId, owner: task.owner, priority, origin, at: record.created_at, staleMs: liveRunLifetimeMs(deps.config) });
      if (admitted === 'waits') {
        admitWaitingSoon(deps, task.owner);
        return { created };
      }
    } else if (deps.config.STARTED_RUNS_PER_USER > 0 && (await isWaitingStart(deps.models, runId))) {
      return { created };
    }
    try {
      await startFromRecord(deps, record, task, created ? payload : undefined, origin);
    } catch (err) {
      // Temporal did not answer: the reconciler starts the run once it does (the trigger's caller may also retry).
      if (unavailableDependency(err) === 'temporal') await deferStart(deps.models, record._id, deps.config.TEMPORAL_TASK_QUEUE).catch(() => undefined);
      throw err;
    }
  }
  return { created };
}

/** A record no worker has written is older than this: its start was lost (a crash between insert and start). */
const LOST_START_MS = 5_000;

/**
 * Reads heal too: a run still `pending`, never recorded by a worker and older than LOST_START_MS whose workflow
 * cannot be queried had its start lost; start it from the record (a no-op when it is in fact running). The record is
 * read again first (a reader's copy may be of a run that has since run, or been deleted), and the task loaded only then.
 */
export async function healLostStart(deps: StartDeps, record: RunRecord, loadTask: () => Promise<TaskForRun | null>): Promise<void> {
  if (record.started || record.status !== 'pending' || Date.now() - record.created_at.getTime() < LOST_START_MS) return;
  if (await isWaitingStart(deps.models, record._id)) return;
  const current = await findRun(deps.models, record._id);
  if (!current || current.started || current.status !== 'pending' || current.created_at.getTime() !== record.created_at.getTime()) return;
  const task = await loadTask();
  if (task) await startFromRecord(deps, current, task);
}

/** A workflow that outlives its run's time limit by this much is stuck (its code cannot run): Temporal ends it. */
const STUCK_WORKFLOW_GRACE_MS = 5 * 60_000;

/**
 * No run can be live longer than this after its trigger: its time limit, the grace before Temporal ends a stuck
 * workflow, and a reconciler pass to record that end (with a minute's margin). A live-run mark older than this is
 * left over (store/live-runs.ts). A run whose start waits that long for Temporal stops counting then.
 */
export const liveRunLifetimeMs = (config: Pick<Config, 'RUN_TIMEOUT_MS' | 'RECONCILE_INTERVAL_MS'>) => config.RUN_TIMEOUT_MS + STUCK_WORKFLOW_GRACE_MS + config.RECONCILE_INTERVAL_MS + 60_000;

/**
 * Starts the record's workflow; a no-op when it runs or has run. The workflow id is the run's name, which a deleted
 * run frees: the start rejects an id Temporal still holds, and only when that is an earlier record's closed execution
 * (ranEarlierRecord) starts again allowing the duplicate. Allowing it outright would let a trigger that read the
 * record `pending` start a second execution of a run that has closed since.
 * `payload`: the trigger data when the caller has it at hand (else it is read back from the record). `origin`: what
 * started the run; a start the reconciler or a read makes again does not know it and takes the task's own priority.
 */
export async function startFromRecord(deps: Omit<StartDeps, 'logger'>, record: RunRecord, task: TaskForRun, payload?: Record<string, unknown>, origin: RunOrigin = 'trigger') {
  const { config } = deps;
  const identity = recordIdentity(record);
  const weight = await ownerWeight(deps.models, identity.owner, config.TRIGGER_CACHE_MS);
  const priority = runPriority({ owner: identity.owner, weight, taskPriority: task.priority, origin: record.replay ? 'replay' : origin });
  // Large trigger data stays out of history: the prepare step reads it from the record.
  const small = Buffer.byteLength(record.payload_json) <= config.RUN_INLINE_BYTES;
  // The task's own limits, within the server's (the API checked them when the task was saved; the server's may have
  // been lowered since).
  const own = task.limits ?? {};
  const timeoutMs = Math.min(config.RUN_TIMEOUT_MS, own.timeout_s ? own.timeout_s * 1000 : Infinity);
  const tokenBudget = Math.min(config.RUN_MAX_TOTAL_TOKENS ?? Infinity, own.max_total_tokens ?? Infinity);
  const input: RunInput = {
    identity,
    taskId: record.task_id.toString(),
    taskVersion: record.task_version,
    payload: small ? (payload ?? (JSON.parse(record.payload_json) as Record<string, unknown>)) : undefined,
    createdAt: record.created_at.getTime(),
    limits: {
      timeoutMs,
      maxTurns: Math.min(config.RUN_MAX_TURNS, own.max_turns ?? Infinity),
      maxTotalTokens: Number.isFinite(tokenBudget) ? tokenBudget : null,
      retry: { initialMs: config.PROVIDER_RETRY_INITIAL_MS, maxMs: config.PROVIDER_RETRY_MAX_MS, maxAttempts: config.PROVIDER_MAX_ATTEMPTS },
      providerHeartbeatMs: config.PROVIDER_HEARTBEAT_TIMEOUT_MS,
      // The SDK gives up after PROVIDER_TIMEOUT_MS; the activity's own bound only catches a call that never returns.
      providerCallMs: config.PROVIDER_TIMEOUT_MS + 30_000,
      continueAsNewEvents: config.RUN_CONTINUE_AS_NEW_EVENTS,
      inputTimeoutMs: config.INPUT_TIMEOUT_S * 1000,
      startWriteDelayMs: config.RUN_START_WRITE_DELAY_MS,
    },
    runner: record.runner,
    oneWriter: true,
    timerLeft: true,
    firstCallEnds: true,
    ...(record.replay ? { replay: true as const } : {}),
  };
  const start = (workflowIdReusePolicy: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE') =>
    deps.temporal.workflow.start<RunTaskWorkflow>(WORKFLOW.run, {
      workflowId: record._id,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [input],
      workflowIdReusePolicy,
      // Fair by owner, ordered by the task's priority (priority.ts; docs/fairness.md).
      priority,
      // The run ends itself at its time limit; this only ends a workflow whose code cannot run (the reconciler then
      // ends its record), across continue-as-new.
      workflowExecutionTimeout: timeoutMs + STUCK_WORKFLOW_GRACE_MS,
      typedSearchAttributes: [
        { key: OWNER, value: identity.owner },
        { key: PROFILE, value: identity.profile },
        { key: TASK, value: identity.task },
        { key: RUNNER, value: record.runner },
      ],
      memo: {
        task: `${identity.owner}/${identity.profile}/${identity.task}`,
        taskVersion: record.task_version,
        runner: record.runner,
        model: task.model,
        [RECORD_CREATED_MEMO]: record.created_at.getTime(),
      },
    });
  // Its workflow continues its trigger's trace (when one was recorded), whoever starts it and whenever.
  const trigger = record.trace_id && record.trace_span_id ? { traceId: record.trace_id, spanId: record.trace_span_id } : undefined;
  if (await inTrace(trigger, () => startUnlessTaken(() => start('REJECT_DUPLICATE')))) return;
  const held = await describeRunExecution(deps.temporal, record._id);
  if (held && (held.running || !ranEarlierRecord(record, held))) return;
  await inTrace(trigger, () => startUnlessTaken(() => start('ALLOW_DUPLICATE')));
}

/**
 * Starts a run that waited for a place among its owner's started runs (admission.ts), from its record: `gone` when the
 * record is no longer a pending run no worker has recorded (closed, deleted, or started by a read's heal); `ended`
 * when its task was deleted meanwhile (a task of the same name made since is another task): the run is ended with
 * that reason, and the caller announces its close. Started on the task queue its trigger would have used.
 */
export async function startWaitingRun(deps: StartDeps, run: { runId: string; origin: RunOrigin; queue: string }): Promise<'started' | 'ended' | 'gone'> {
  const { runId, origin } = run;
  const record = await findRun(deps.models, runId);
  if (!record || record.started || record.status !== 'pending') return 'gone';
  const task = await findTask(deps.models, { owner: record.owner, profile: record.profile, name: record.task });
  if (!task || !task._id.equals(record.task_id)) return (await recordOutsideEnd(deps.models, runId, 'the task was deleted before the run could start')).written ? 'ended' : 'gone';
  // On the queue its trigger would have started it on (not necessarily this process's).
  await startFromRecord({ ...deps, config: { ...deps.config, TEMPORAL_TASK_QUEUE: run.queue } }, record, task, undefined, origin);
  return 'started';
}

/** false when Temporal already holds the workflow id (WorkflowExecutionAlreadyStartedError). */
async function startUnlessTaken(start: () => Promise<unknown>): Promise<boolean> {
  try {
    await start();
    return true;
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return false;
  }
}
