import { ActivityFailure, CancellationScope, isCancellation, patched, proxyActivities, proxyLocalActivities, sleep, uuid4, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { RunActivities } from '../activities/run-activities';
import { LEVEL, mcpTaskQueue, toolTaskQueue } from '../src/contract/constants';
import { isOwnerBusy, isRunClosed, readFailure } from '../src/contract/failures';
import type { ModelCallInput, ModelTurn, PreparedRun, RunInput, RunRef, RunStatus, Text, ToolOutcome } from '../src/contract/types';
import type { McpToolCallInput } from '../activities/mcp-call';
import type { McpTaskState } from '../src/mcp/tasks';
import { ABORT, mcpCall, ownerBusyWait, providerCall, RECORD, RECORDED_RESULT, TOOL_CALL } from './limits';
import { RunFailed, type RunClock } from './run-clock';
import type { RunControls } from './run-controls';
import type { RunLog } from './run-log';

/**
 * A write of the workflow's found its run's record closed, from outside: the run was cancelled before its workflow
 * had started (a cancel closes a record not yet started while a trigger may be starting it), or ended by an
 * operator's tool. (Legacy runs, started before 2026-11-28: also by a model call whose end the workflow did not hear.)
 * The record is the run's account from then on: the workflow stops with nothing more of its own, and drops from its
 * view what the record did not take.
 */
export class RecordClosed extends Error {}

/**
 * Whether a step failed because the run's record is closed (`RecordClosed`, or an activity's `RunClosed`). A local
 * activity's (`prepareRun`) comes as the failure itself, which runs recorded before 2026-11-27 did not take for it:
 * they went on to write an end of their own, which found the record closed (patch `local-run-closed`).
 */
export const recordClosed = (err: unknown) =>
  err instanceof RecordClosed || (isRunClosed(err) && (err instanceof ActivityFailure || patched(LOCAL_RUN_CLOSED)));
const LOCAL_RUN_CLOSED = 'local-run-closed';
/** A task waiting for input (`input_required`) has its questions answered through `tasks/result` (docs/mcp.md). */
const MCP_TASK_INPUT = 'mcp-task-input';

/** What a replay's model hears for a call its original did not make (tools `recorded`). */
const NOT_RECORDED = 'no recorded result for this call';

/** How often a run polls an MCP task, at least and at most (run-steps' mcpTask). */
const MCP_TASK_POLL_MIN_MS = 1_000;
const MCP_TASK_POLL_MAX_MS = 60_000;
/** INPUT_TIMEOUT_S's default, for runs started before the limit was passed to them. */
const DEFAULT_INPUT_TIMEOUT_MS = 24 * 3600_000;

/** A model's answer, with when it ended the run when the call recorded that end itself. */
export type Answer = ModelTurn & { finishedAt?: number };
export type ToolCallAsked = ModelTurn['toolCalls'][number];

/**
 * What the steps of a run share: its input, its record's identity, its view, its clock and what reaches it from
 * outside; `legacy`: a run started before 2026-11-28 (input without `oneWriter`), whose model calls record its start and end
 * themselves (run-start.ts `legacyFirstCall`, `callModel`'s `finish`).
 */
export interface RunParts {
  input: RunInput;
  run: RunRef;
  log: RunLog;
  clock: RunClock;
  controls: RunControls;
  legacy: boolean;
}

/**
 * The steps of a run, each one activity (or a wait) and what it adds to the run's view: record the view, ask the
 * model (retried with backoff), wait for a decision, call a tool, stop the calls of a cancelled run.
 */
export class RunSteps {
  private readonly providerOptions;

  /** Writes asked while one is in flight, in order (undefined while none is in flight). */
  private waiting: { status?: RunStatus; resolve: () => void; reject: (err: unknown) => void }[] | undefined;
  /** A model call wrote the run's text so far (it was followed): the next record write deletes it (`streamed`). */
  private textWritten = false;
  /** A replay's recorded results used so far, by call key (run-task.ts carries them across a continue-as-new). */
  readonly replayUsed: Record<string, number>;

  constructor(private readonly parts: RunParts) {
    const { limits } = parts.input;
    this.replayUsed = { ...(parts.input.resume?.replayUsed ?? {}) };
    this.providerOptions = providerCall(limits.providerHeartbeatMs, limits.providerCallMs);
    parts.controls.serveInputs({ record: (status) => this.record(status), timeLeft: () => parts.clock.left(), timeoutMs: limits.inputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS });
  }

  /** Options of a provider call, bounded by the run's time left (throws the time limit when none is left). */
  providerCallOptions() {
    return this.parts.clock.bounded(this.providerOptions);
  }

  /**
   * Writes what the store does not have yet (entries, messages) with the status; sets the status first if given.
   * Throws RecordClosed when the record is closed (nothing written; the view keeps the status it had, since a
   * closed status here would have readers take the view for the run's end). Writes are made one at a time, in the
   * order asked: a handler (an MCP server's question, its answer) may record while the main flow awaits a call.
   */
  record(status?: RunStatus): Promise<void> {
    if (this.waiting) {
      const waiting = this.waiting;
      return new Promise<void>((resolve, reject) => waiting.push({ status, resolve, reject }));
    }
    this.waiting = [];
    return this.write(status);
  }

  private async write(status?: RunStatus): Promise<void> {
    try {
      const { log, run } = this.parts;
      const before = log.status;
      if (status) {
        log.status = status;
        log.modifiedAt = Date.now();
      }
      const batch = log.take();
      const clearText = this.textWritten ? { clearText: true as const } : {};
      this.textWritten = false;
      const written = await proxyLocalActivities<RunActivities>(RECORD).recordRun({ run, status: log.status, modifiedAt: log.modifiedAt, ...batch, usage: log.usage, ...(status ? { transition: true } : {}), ...clearText });
      if (written === false) {
        log.status = before;
        throw new RecordClosed();
      }
      log.recorded(batch);
    } finally {
      // The next write asked meanwhile, whatever became of this one (each caller hears its own write's outcome).
      const next = this.waiting?.shift();
      if (next) void this.write(next.status).then(next.resolve, next.reject);
      else this.waiting = undefined;
    }
  }

  /**
   * One model call, retried with backoff (the run shows `pending` while it waits); a call refused at its owner's cap
   * (`OwnerBusy`) is made again after a wait of its own (`running` meanwhile), not counted as an attempt. `failedFirst`:
   * how its first attempt failed (the run's first call, made by RunStart). Legacy runs: `finishedAt` when it ended the run.
   */
  async askModel(prepared: PreparedRun, failedFirst?: unknown): Promise<Answer> {
    const { input, log, clock } = this.parts;
    const { limits } = input;
    let first = failedFirst;
    let busyWaits = 0;
    for (let attempt = 1; ; ) {
      try {
        if (first !== undefined) {
          const failed = first;
          first = undefined;
          throw failed;
        }
        return await this.callModelOnce(prepared, attempt);
      } catch (err) {
        // Legacy runs: a call that found the run ended (its end written by an earlier call this view did not hear) is
        // not the run's failure: the record's account stands.
        if (isCancellation(err) || recordClosed(err)) throw err;
        if (isOwnerBusy(err)) {
          // Refused before it started (the owner's calls on the worker are at their cap, src/temporal/owner-slots.ts):
          // not the provider's failure, so no attempt is counted and the run's log says nothing; the run stays
          // `running`, its start recorded before the first wait so lists show it. No old history has this failure,
          // so the branch needs no patch.
          if (busyWaits === 0 && !log.allRecorded) await this.record();
          await sleep(Math.max(1, Math.min(ownerBusyWait(busyWaits++), clock.left())));
          if (clock.left() <= 0) throw clock.timeLimit();
          continue;
        }
        const failure = clock.past(err);
        if (failure instanceof RunFailed) throw failure;
        const { retryable, reason, retryAfterMs } = readFailure(failure, { name: 'the provider call', kind: 'provider' });
        if (!retryable) throw new RunFailed(reason);
        const { initialMs, maxMs, maxAttempts } = limits.retry;
        if (attempt >= maxAttempts) throw new RunFailed(`${reason} (gave up after ${attempt} attempts)`);
        const wait = Math.min(maxMs, Math.max(retryAfterMs ?? 0, initialMs * 2 ** (attempt - 1)));
        log.push({ msg: `${reason}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})`, time: Date.now(), level: LEVEL.warn });
        await this.record('pending');
        await sleep(Math.max(1, Math.min(wait, clock.left())));
        if (clock.left() <= 0) throw clock.timeLimit();
        await this.record('running');
        attempt++;
      }
    }
  }

  /**
   * One attempt of a model call (`callModel`) with the conversation so far; given the prompt when the store does not
   * have it yet (the run's first call, before its start is recorded).
   */
  async callModelOnce(prepared: PreparedRun, attempt = 1): Promise<Answer> {
    const { input, run, log } = this.parts;
    const legacy = this.parts.legacy;
    const prompt = log.unrecordedPrompt;
    const call: ModelCallInput = {
      run,
      taskId: input.taskId,
      taskVersion: input.taskVersion,
      model: { runner: prepared.runner, model: prepared.model, maxTokens: prepared.maxTokens, toolSpecs: prepared.toolSpecs },
      messages: log.messages,
      ...(prompt !== undefined ? { prompt } : {}),
      entriesFrom: log.total,
      // Legacy runs: with nothing left to write, an answer without tool calls ends the run in the same activity (if
      // it keeps the run within its token budget); a call made again first checks the record.
      finish: legacy && log.allRecorded,
      ...(legacy && attempt > 1 ? { again: true } : {}),
      usage: log.usage,
      maxTotalTokens: input.limits.maxTotalTokens,
    };
    return this.heard(await proxyActivities<RunActivities>(this.providerCallOptions()).callModel(call));
  }

  /** A model call's answer: one that wrote its run's text so far (`streamed`) has the next record write delete it. */
  heard<T extends ModelTurn>(answer: T): T {
    if (answer.streamed) this.textWritten = true;
    return answer;
  }

  /**
   * Runs one tool call the model asked for (after a person's decision when its install asks for one). A replay's
   * (`prepared.replayTools` other than `live`) is first looked up among its original's recorded results: found, that
   * result is the outcome (`replayed`: no approval, no call); not found, `recorded` answers that there is none and
   * `recorded_then_live` calls the tool as any run does.
   */
  async callTool(prepared: PreparedRun, call: ToolCallAsked): Promise<ToolOutcome> {
    const { input, run, log, clock, controls } = this.parts;
    if (prepared.replayTools && prepared.replayTools !== 'live') {
      const found = await proxyLocalActivities<RunActivities>(RECORDED_RESULT).recordedToolResult({ run, tool: call.name, arguments: call.arguments, used: this.replayUsed });
      if (found.outcome) {
        this.replayUsed[found.key] = (this.replayUsed[found.key] ?? 0) + 1;
        return { ...found.outcome, replayed: true };
      }
      if (prepared.replayTools === 'recorded') return { isError: true, message: { text: NOT_RECORDED }, shown: NOT_RECORDED };
    }
    const route = prepared.tools.find((t) => t.name === call.name);
    if (!route) {
      const text = `unknown tool "${call.name}"`;
      return { isError: true, message: { text }, shown: text };
    }
    if (route.approval) {
      const denied = await this.approval(call);
      if (denied !== undefined) return { isError: true, message: { text: denied }, shown: denied };
    }
    log.usage = { ...log.usage, tool_calls: log.usage.tool_calls + 1 };
    const where = { run, owner: input.identity.owner, profile: input.identity.profile, install: route.install, tool: route.tool, arguments: call.arguments };
    try {
      if (route.mcp) {
        // On the MCP queue, with slots of its own; whether a call may be made again is the activity's to decide.
        const options = { ...clock.bounded(mcpCall(input.limits.providerHeartbeatMs, input.limits.inputTimeoutMs ?? DEFAULT_INPUT_TIMEOUT_MS)), taskQueue: mcpTaskQueue(workflowInfo().taskQueue) };
        if (route.task) return await this.mcpTask(options, where);
        // The run's model, for the server's sampling requests when its install allows them (activities/mcp-sampling.ts).
        const sampling = { taskId: input.taskId, taskVersion: input.taskVersion, model: { runner: prepared.runner, model: prepared.model, maxTokens: prepared.maxTokens }, usage: log.usage, maxTotalTokens: input.limits.maxTotalTokens };
        try {
          return await proxyActivities<RunActivities>(options).callMcpTool({ ...where, ...(route.idempotent ? { idempotent: true } : {}), sampling, callId: call.id });
        } finally {
          // A question of the call's server still open (its worker lost, or the server stopped waiting) ends with it.
          if (!CancellationScope.current().consideredCancelled && controls.inputs?.endOpen('the call ended')) await this.record('running');
        }
      }
      const options = { ...clock.bounded(TOOL_CALL), taskQueue: toolTaskQueue(workflowInfo().taskQueue) };
      // The model's id of the call: the tool call's span says it (activities only read it; replays do not compare it).
      return await proxyActivities<RunActivities>(options).callTool({ ...where, callId: call.id });
    } catch (err) {
      if (err instanceof RecordClosed) throw err;
      const failure = clock.past(err);
      if (failure instanceof RunFailed || isCancellation(failure)) throw failure;
      throw new RunFailed(`tool ${call.name} failed: ${readFailure(failure, { name: `tool ${call.name}`, kind: 'tool' }).reason}`);
    }
  }

  /**
   * A tool its MCP server runs as a task: started, then followed with a poll on a timer (no activity slot held while
   * it works: the server's `pollInterval`, at least 1 s, and a thirtieth of the time it has taken so far, at most a
   * minute, so a long task costs few history events), its result read once it ends. A run cancelled or out of time
   * cancels the task. A task asking for input (`input_required`) has its questions, which come on the stream of
   * `tasks/result`, asked of a person as a call's are (docs/mcp.md, "Inputs"), then is followed again or gives its result.
   */
  private async mcpTask(options: ActivityOptions, where: Omit<McpToolCallInput, 'arguments'> & { run: RunRef; arguments: Text }): Promise<ToolOutcome> {
    const { clock } = this.parts;
    const act = proxyActivities<RunActivities>(options);
    const started = await act.startMcpTask(where);
    if ('outcome' in started) return started.outcome;
    const { arguments: _args, ...at } = where;
    const step = { ...at, task: { sessionId: started.task.sessionId, taskId: started.task.taskId } };
    const since = Date.now();
    let state: McpTaskState = started.task;
    let ended = false;
    try {
      for (;;) {
        while (state.status === 'working') {
          const wait = Math.min(MCP_TASK_POLL_MAX_MS, Math.max(MCP_TASK_POLL_MIN_MS, state.pollIntervalMs ?? 0, (Date.now() - since) / 30));
          if (clock.left() <= wait) throw clock.timeLimit();
          await sleep(wait);
          const next = await act.followMcpTask(step);
          if ('outcome' in next) {
            ended = true;
            return next.outcome;
          }
          state = next;
        }
        if (state.status !== 'input_required') break;
        // Runs started before 2026-11-28 cancelled a task that asked for input.
        if (!patched(MCP_TASK_INPUT)) {
          const text = `the tool's task asks for input, which this run cannot give it yet; the task was cancelled${state.statusMessage ? ` (it said: ${state.statusMessage})` : ''}`;
          return { isError: true, message: { text }, shown: text };
        }
        const next = await this.answerTask(act, step);
        if ('outcome' in next) {
          ended = !next.outcome.isError;
          return next.outcome;
        }
        state = next;
      }
      ended = true;
      return await act.mcpTaskResult(step);
    } finally {
      if (!ended) await CancellationScope.nonCancellable(() => act.cancelMcpTask(step)).catch(() => undefined);
    }
  }

  /** A task's questions answered (`answerMcpTask`); a question still open when that ends is closed with it. */
  private async answerTask(act: ReturnType<typeof proxyActivities<RunActivities>>, step: Parameters<RunActivities['answerMcpTask']>[0]) {
    try {
      return await act.answerMcpTask(step);
    } finally {
      if (!CancellationScope.current().consideredCancelled && this.parts.controls.inputs?.endOpen('the task\'s questions ended')) await this.record('running');
    }
  }

  /** Stops this run's calls in flight in the worker that runs it (elsewhere: at their next heartbeat). */
  async abortCalls(): Promise<void> {
    await proxyLocalActivities<RunActivities>(ABORT).abortRunCalls({ run: this.parts.run });
  }

  /** Waits for a person's decision on a tool call (status `pending` meanwhile); the denial's text, or undefined. */
  private async approval(call: ToolCallAsked): Promise<string | undefined> {
    const { log, clock, controls } = this.parts;
    const id = uuid4();
    controls.ask(id, call.name);
    log.push({ msg: `approval needed: ${call.name}`, approval: { id, tool: call.name, arguments: call.arguments } });
    await this.record('pending');
    const decision = await controls.decision(id, clock.left());
    if (!decision) throw clock.timeLimit();
    const { approve, by, reason } = decision;
    const why = reason ? `: ${reason}` : '';
    log.push({ msg: approve ? `approved by ${by}: ${call.name}${why}` : `denied by ${by}: ${call.name}${why}`, time: Date.now(), level: approve ? LEVEL.info : LEVEL.warn });
    await this.record('running');
    return approve ? undefined : `denied: ${reason || `by ${by}`}`;
  }
}
