import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { RunActivities } from '../activities/run-activities';
import { addModelCall, finalEntry, LEVEL, toolTaskQueue } from '../src/contract/constants';
import { APPROVAL_FAILURE, isTemplateFailure, readFailure } from '../src/contract/failures';
import { approvalUpdate, cancelSignal, runQuery } from '../src/contract/messages';
import { ABORT, PREPARE, RECORD, TOOL_CALL, providerCall } from './limits';
import { RunLog } from './run-log';
import type {
  ApprovalDecision,
  FirstModelCall,
  ModelCallInput,
  ModelTurn,
  PreparedRun,
  RunInput,
  RunOutcome,
  RunRef,
  RunStatus,
  Text,
  StartedRun,
  ToolOutcome,
} from '../src/contract/types';

/** A failure that ends the run in `error` with this message as the reason. */
class RunFailed extends Error {}

/**
 * The run's record was closed by another writer: a model call whose end this workflow did not hear (a lost worker)
 * wrote it, or the run was ended from outside. The record is the run's account from then on: the workflow stops
 * with nothing more of its own, and drops from its view what the record did not take.
 */
class ClosedElsewhere extends Error {}

/** The activity's `RunClosed` (activities found the record closed): the run ended elsewhere. */
const closedElsewhere = (err: unknown) =>
  err instanceof ClosedElsewhere || (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'RunClosed');

type Ending = { kind: 'answer'; text: Text; finishedAt?: number } | { kind: 'continue'; turn: number };

/**
 * One run of a task: expand the prompt, call the provider, run the tools it asks for, until it answers without tool
 * calls. Contents stay out of history: activities store what they produce and return references, the conversation
 * is stored once and a model call is given only its length, and the entries are written to the run record as they
 * accumulate (at every status change and every turn). A long run continues as new under the same workflow id.
 */
export async function runTask(input: RunInput): Promise<RunOutcome> {
  const { resume, limits } = input;
  const log = new RunLog(
    resume
      ? { createdAt: input.createdAt, entries: resume.entries, messages: resume.messages, at: Date.now(), status: 'running', usage: resume.usage }
      : { createdAt: input.createdAt, entries: 0, messages: 0, at: input.createdAt },
  );
  setHandler(runQuery, (query) => log.snapshot(query?.from));
  const run: RunRef = { id: workflowInfo().workflowId, createdAt: input.createdAt };

  // The run's work runs in this scope: a cancel request cancels it, and with it the call in flight.
  const work = new CancellationScope();
  let cancelledBy: string | undefined;
  setHandler(cancelSignal, ({ by }) => {
    if (cancelledBy !== undefined) return;
    cancelledBy = by;
    work.cancel();
  });

  /** Tool calls that asked for approval, by id: decided once. */
  const approvals = new Map<string, { tool: string; decision?: ApprovalDecision }>();
  setHandler(
    approvalUpdate,
    (decision) => {
      approvals.get(decision.id)!.decision = decision;
    },
    {
      validator: (decision) => {
        const asked = approvals.get(decision.id);
        if (!asked) throw ApplicationFailure.nonRetryable(`this run has no approval "${decision.id}"`, APPROVAL_FAILURE.unknown);
        if (asked.decision) throw ApplicationFailure.nonRetryable(`approval "${decision.id}" was already decided by ${asked.decision.by}`, APPROVAL_FAILURE.decided);
        if (cancelledBy !== undefined || log.status === 'ready' || log.status === 'error') throw ApplicationFailure.nonRetryable('the run is closing', APPROVAL_FAILURE.closed);
      },
    },
  );

  // The time limit is a deadline every remote call is bounded by, carried across continue-as-new.
  const deadline = resume?.deadline ?? Date.now() + limits.timeoutMs;
  const timeLimit = () => new RunFailed(`the run exceeded its time limit of ${Math.round(limits.timeoutMs / 1000)} s`);
  /** Options for a remote call: its own bound, cut to what is left of the run's time (scheduling included). */
  const bounded = <T extends { startToCloseTimeout: number }>(options: T): T => {
    const left = deadline - Date.now();
    if (left <= 0) throw timeLimit();
    return { ...options, startToCloseTimeout: Math.min(options.startToCloseTimeout, left), scheduleToCloseTimeout: left };
  };
  /** A remote call's failure, as the time limit when it was the deadline that ended it. */
  const past = (err: unknown) => {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (!(cause instanceof TimeoutFailure) || cause.timeoutType === TimeoutType.HEARTBEAT) return err;
    return cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE || deadline - Date.now() <= 0 ? timeLimit() : err;
  };

  const { recordRun } = proxyLocalActivities<RunActivities>(RECORD);
  /** Writes what the store does not have yet (entries, messages) with the status; sets the status first if given. */
  const record = async (status?: RunStatus) => {
    const before = log.status;
    if (status) {
      log.status = status;
      log.modifiedAt = Date.now();
    }
    const batch = log.take();
    const written = await recordRun({ run, status: log.status, modifiedAt: log.modifiedAt, ...batch, usage: log.usage, ...(status ? { transition: true } : {}) });
    // `false`: the record is closed (histories from before recordRun said so hold no answer: written). The view keeps
    // the status it had: a closed status here would have readers take the view for the run's end.
    if (written === false) {
      log.status = before;
      throw new ClosedElsewhere();
    }
    log.recorded(batch);
  };
  const providerOptions = providerCall(limits.providerHeartbeatMs, limits.providerCallMs);

  /**
   * One model call, retried with backoff (the run shows `pending` while it waits); `finishedAt` when it ended the run.
   * `failedFirst`: how its first attempt failed (the run's first call, made by `prepareAndCallModel`).
   */
  const modelTurn = async (prepared: PreparedRun, failedFirst?: unknown): Promise<ModelTurn & { finishedAt?: number }> => {
    const model = { runner: prepared.runner, model: prepared.model, maxTokens: prepared.maxTokens, toolSpecs: prepared.toolSpecs };
    for (let attempt = 1; ; attempt++) {
      // With nothing left to write, an answer without tool calls ends the run in the same activity (if it keeps the
      // run within its token budget).
      const call: ModelCallInput = {
        run,
        taskId: input.taskId,
        taskVersion: input.taskVersion,
        model,
        messages: log.messages,
        entriesFrom: log.total,
        finish: log.allRecorded,
        ...(attempt > 1 ? { again: true } : {}),
        usage: log.usage,
        maxTotalTokens: limits.maxTotalTokens,
      };
      try {
        if (attempt === 1 && failedFirst !== undefined) throw failedFirst;
        return await proxyActivities<RunActivities>(bounded(providerOptions)).callModel(call);
      } catch (err) {
        if (isCancellation(err)) throw err;
        const failure = past(err);
        if (failure instanceof RunFailed) throw failure;
        const { retryable, reason, retryAfterMs } = readFailure(failure, { name: 'the provider call', kind: 'provider' });
        if (!retryable) throw new RunFailed(reason);
        const { initialMs, maxMs, maxAttempts } = limits.retry;
        if (attempt >= maxAttempts) throw new RunFailed(`${reason} (gave up after ${attempt} attempts)`);
        const wait = Math.min(maxMs, Math.max(retryAfterMs ?? 0, initialMs * 2 ** (attempt - 1)));
        log.push({ msg: `${reason}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})`, time: Date.now(), level: LEVEL.warn });
        await record('pending');
        await sleep(Math.max(1, Math.min(wait, deadline - Date.now())));
        if (deadline - Date.now() <= 0) throw timeLimit();
        await record('running');
      }
    }
  };

  /** Waits for a person's decision on a tool call (status `pending` meanwhile); the denial's text, or undefined. */
  const approval = async (call: ModelTurn['toolCalls'][number]): Promise<string | undefined> => {
    const id = uuid4();
    approvals.set(id, { tool: call.name });
    log.push({ msg: `approval needed: ${call.name}`, approval: { id, tool: call.name, arguments: call.arguments } });
    await record('pending');
    const left = deadline - Date.now();
    if (left <= 0 || !(await condition(() => approvals.get(id)!.decision !== undefined, left))) throw timeLimit();
    const { approve, by, reason } = approvals.get(id)!.decision!;
    const why = reason ? `: ${reason}` : '';
    log.push({ msg: approve ? `approved by ${by}: ${call.name}${why}` : `denied by ${by}: ${call.name}${why}`, time: Date.now(), level: approve ? LEVEL.info : LEVEL.warn });
    await record('running');
    return approve ? undefined : `denied: ${reason || `by ${by}`}`;
  };

  const toolCall = async (prepared: PreparedRun, call: ModelTurn['toolCalls'][number]): Promise<ToolOutcome> => {
    const route = prepared.tools.find((t) => t.name === call.name);
    if (!route) {
      const text = `unknown tool "${call.name}"`;
      return { isError: true, message: { text }, shown: text };
    }
    if (route.approval) {
      const denied = await approval(call);
      if (denied !== undefined) return { isError: true, message: { text: denied }, shown: denied };
    }
    log.usage = { ...log.usage, tool_calls: log.usage.tool_calls + 1 };
    try {
      return await proxyActivities<RunActivities>({ ...bounded(TOOL_CALL), taskQueue: toolTaskQueue(workflowInfo().taskQueue) }).callTool({ run, owner: input.identity.owner, profile: input.identity.profile, install: route.install, tool: route.tool, arguments: call.arguments });
    } catch (err) {
      const failure = past(err);
      if (failure instanceof RunFailed || isCancellation(failure)) throw failure;
      throw new RunFailed(`tool ${call.name} failed: ${readFailure(failure, { name: `tool ${call.name}`, kind: 'tool' }).reason}`);
    }
  };

  let prepared: PreparedRun | undefined = resume?.prepared;
  /**
   * The first call (`prepareAndCallModel`) was sent, and this view has not heard what it prepared (it is in flight,
   * or it failed, was cancelled or ran out of time): the record may have the first entries, which a write of this
   * view's would overwrite. Its end is then written after them, once prepared again (the same entries).
   */
  let startUnheard = false;
  /** What the run's preparation recorded: the run is `running` with these first entries, the prompt is message 0. */
  const started = (done: StartedRun) => {
    log.status = 'running';
    log.pushRecorded(done.entries, done.at);
    log.promptRecorded();
    prepared = done.prepared;
    startUnheard = false;
  };
  /** When the first call was sent: a preparation made again after it writes the same entries (their time is this). */
  let firstAt: number | undefined;
  /** Prepares the run in a local activity of its own (retried through a store's stall; a template's fault fails the run). */
  const prepareHere = async () =>
    started(await proxyLocalActivities<RunActivities>(PREPARE).prepareRun({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, ...(firstAt !== undefined ? { at: firstAt } : {}) }));
  /**
   * The run's first model call, which prepares the run first: its answer; or how it failed after it was sent (the
   * record may then have the first entries: they are prepared again, the same); or nothing when preparing failed.
   */
  const firstCall = async (runner: string): Promise<{ answer?: ModelTurn & { finishedAt?: number }; failure?: unknown }> => {
    const options = bounded(providerOptions);
    firstAt = Date.now();
    // The view says `running` while the call prepares and asks the model (the record does once it has prepared).
    const before = log.status;
    log.status = 'running';
    let result: FirstModelCall;
    startUnheard = true;
    try {
      result = await proxyActivities<RunActivities>(options).prepareAndCallModel({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, at: firstAt, runner, usage: log.usage, maxTotalTokens: limits.maxTotalTokens });
    } catch (err) {
      const failure = past(err);
      if (isCancellation(err) || failure instanceof RunFailed) throw failure;
      log.status = before;
      if (isTemplateFailure(err)) {
        // Thrown while preparing, before anything was written: the run's end, as prepareRun's would be.
        startUnheard = false;
        throw err;
      }
      return { failure: err };
    }
    if ('unprepared' in result) {
      // Preparing failed before it wrote anything: the workflow prepares the run on its own.
      startUnheard = false;
      log.status = before;
      return {};
    }
    const { started: done, ...answer } = result;
    started(done);
    return { answer };
  };
  const execute = async (): Promise<Ending> => {
    let first: { answer?: ModelTurn & { finishedAt?: number }; failure?: unknown } = {};
    if (!prepared) {
      // Runs started before the first call prepared (their histories have prepareRun) keep doing it on their own.
      if (input.prepareInCall) first = await firstCall(input.prepareInCall.runner);
      if (!prepared) await prepareHere();
    }
    const firstTurn = resume?.turn ?? 1;
    for (let turn = firstTurn; turn <= limits.maxTurns; turn++) {
      if (turn > firstTurn && historyIsLong(limits.continueAsNewEvents)) return { kind: 'continue', turn };
      // The first call's answer, or its failure as this turn's first attempt; later turns call the model themselves.
      const answer = first.answer ?? (await modelTurn(prepared!, first.failure));
      first = {};
      log.usage = addModelCall(log.usage, answer.usage);
      const budget = limits.maxTotalTokens;
      if (budget && log.usage.input_tokens + log.usage.output_tokens > budget) {
        throw new RunFailed(`token budget of ${budget} exceeded (the run used ${log.usage.input_tokens + log.usage.output_tokens} tokens)`);
      }
      if (answer.toolCalls.length === 0) return { kind: 'answer', text: answer.text, finishedAt: answer.finishedAt };
      if (answer.text !== '') log.push({ msg: 'assistant', exchange: { role: 'assistant', content: answer.text } });
      log.addMessage({ role: 'assistant', text: answer.text, toolCalls: answer.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })) });
      for (const call of answer.toolCalls) {
        log.push({ msg: `tool call: ${call.name}`, exchange: { role: 'assistant', content: call.shown } });
        const outcome = await toolCall(prepared!, call);
        log.push({ msg: `tool result: ${call.name}${outcome.isError ? ' (error)' : ''}`, exchange: { role: 'tool', content: outcome.shown } });
        log.addMessage({ role: 'tool', callId: call.id, name: call.name, isError: outcome.isError, ...outcome.message });
      }
      // The turn's entries and messages, stored before the next model call reads the conversation.
      await record();
    }
    throw new RunFailed(`the run reached its turn limit of ${limits.maxTurns} model calls without a final answer`);
  };

  let status: RunStatus;
  let ending: Ending | undefined;
  try {
    ending = await work.run(execute);
  } catch (err) {
    // Only where it happens (`patched`): an execution that met it before this code recorded an end of its own.
    if (closedElsewhere(err) && patched('closed-elsewhere')) return endedElsewhere();
    const cancelled = isCancellation(err);
    const reason =
      err instanceof RunFailed ? err.message : cancelled ? (cancelledBy !== undefined ? `cancelled by ${cancelledBy}` : 'the run was cancelled') : readFailure(err, { name: 'the run', kind: 'other' }).reason;
    // A call of this run in flight in this worker stops now; in another worker, at its next heartbeat.
    if (cancelled) await CancellationScope.nonCancellable(() => proxyLocalActivities<RunActivities>(ABORT).abortRunCalls({ run })).catch(() => undefined);
    if (startUnheard && (cancelled || !(err instanceof ActivityFailure && err.activityType === 'prepareRun'))) {
      // The first call may have recorded the first entries: prepared again (the same entries, at the same places),
      // the end goes after them. A record closed meanwhile is the run's account. (When preparing again is what just
      // failed, after its retries, the end goes after what this view has.)
      try {
        await CancellationScope.nonCancellable(prepareHere);
      } catch (prepareErr) {
        if (closedElsewhere(prepareErr)) return endedElsewhere();
        // Not prepared (its own failure, logged by the worker): the end goes after what this view has.
      }
    }
    log.push({ msg: reason, error: reason, lastMessage: { role: 'system', content: reason } });
  }
  if (ending?.kind === 'continue') {
    // Everything is recorded (the turn ended with a write); the next execution starts from the store.
    const next = { deadline, turn: ending.turn, prepared: prepared!, entries: log.total, messages: log.messages, continued: (resume?.continued ?? 0) + 1, usage: log.usage };
    return continueAsNew<typeof runTask>({ ...input, payload: undefined, resume: next });
  }
  if (ending?.finishedAt !== undefined) {
    // The model call recorded the run's end itself.
    log.status = 'ready';
    log.pushRecorded([finalEntry(ending.text)], ending.finishedAt);
    return { status: 'ready', entries: log.total };
  }
  if (ending) {
    status = 'ready';
    log.push(finalEntry(ending.text));
  } else status = 'error';
  // Recorded even when the workflow itself is being cancelled (task deleted), so the record says why it ended.
  try {
    await CancellationScope.nonCancellable(() => record(status));
  } catch (err) {
    if (err instanceof ClosedElsewhere) return endedElsewhere();
    throw err;
  }
  return { status, entries: log.total };

  /** The run's end is the record's (ClosedElsewhere): the view keeps only what the record has. */
  function endedElsewhere(): RunOutcome {
    log.discardUnrecorded();
    return { status: log.status, entries: log.total, closedElsewhere: true };
  }
}

/** Past RUN_CONTINUE_AS_NEW_EVENTS events, or when Temporal suggests it (history size or length) if that is 0. */
function historyIsLong(maxEvents: number): boolean {
  const info = workflowInfo();
  return maxEvents > 0 ? info.historyLength >= maxEvents : info.continueAsNewSuggested;
}
