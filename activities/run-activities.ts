import { Context } from '@temporalio/activity';
import { storeText } from '../src/store/run-content';
import { deferStart, startWithEnd, type Recorded } from '../src/runs/recorder';
import { findOpenRecord, type RunProgress } from '../src/store/runs';
import { findTaskVersion, openTaskKey, type TaskVersionRecord } from '../src/store/tasks';
import { createTtlCache } from '../src/ttl-cache';
import type { Runs } from '../src/runs';
import { addModelCall, finalEntry, isTerminal } from '../src/contract/constants';
import { isRunClosed, isTemplateFailure, runFailure } from '../src/contract/failures';
import type { CallToolResult, FirstModelCall, RunUsage, FirstModelCallInput, ModelCallInput, ModelTurn, RunRef, Runner, SamplingInput, StartedRun, Text, ToolOutcome, ToolSpec, Turn } from '../src/contract/types';
import type { ActivityDeps } from './deps';
import { linkedAbort } from './linked-abort';
import { createPrepare, type Opening, type PrepareInput } from './prepare-run';
import { createReplayToolActivities } from './replay-tools';
import { callAnthropic } from './providers/anthropic';
import { base64Bytes, callOpenAI } from './providers/openai';
import { traceChat, traceToolCall } from '../src/telemetry/genai';
import { createRunContentCache } from './run-content-cache';
import type { ToolCallInput } from './tool-call';
import type { McpToolCallInput } from './mcp-call';
import { createRunSampler } from './mcp-sampling';
import { runTextWriter } from './followed-runs';
import { clearRunText, writeRunText } from '../src/store/run-text';
import type { ProviderAnswer, ProviderRequest } from './providers/call';
import { createInputAsker } from './mcp-input';
import type { McpTaskRef, McpTaskState } from '../src/mcp/tasks';

/** One step on a run's MCP task: where its install is, and the task. */
type McpTaskStep = Omit<McpToolCallInput, 'arguments'> & { run: RunRef; task: McpTaskRef };

const VERSION_CACHE_MS = 60_000;
/** How long a cancelled run's workflow waits for this process's calls of it to stop (within ABORT's 10 s). */
const ABORT_WAIT_MS = 5_000;

/**
 * The activities of a run. Keys are loaded and decrypted only in an activity that calls the provider (`askProvider`:
 * a model call, an MCP call's sampling), used, and dropped. Whatever an activity produces above RUN_INLINE_BYTES (the
 * prompt, an answer, a tool's result) it stores itself and returns as a reference, so history holds references; the
 * conversation is read from the store by the model call.
 */
export function createRunActivities(deps: ActivityDeps, runs: Runs) {
  const { models } = deps.db;
  const inline = deps.config.RUN_INLINE_BYTES;
  const contents = createRunContentCache(models, deps.config.CONTENT_CACHE_MB * 1024 * 1024);

  // A task version never changes once saved, so a run's several reads of it (prepare, then every model call) and
  // the runs of a busy task share one database read. Bounded in size and age (a deleted task's runs are cancelled).
  const versions = createTtlCache<TaskVersionRecord>(VERSION_CACHE_MS, { maxEntries: 1_000 });
  const loadVersion = (taskId: string, version: number) =>
    versions.get(`${taskId}:${version}`, async () => {
      const found = await findTaskVersion(models, taskId, version);
      if (!found) throw runFailure('TaskGone', `task version ${version} no longer exists (the task was deleted)`);
      return found;
    });

  /** Stores `text` when it is large, under a key unique to this activity execution (stable across its retries). */
  const store = async (run: RunRef, slot: string, text: string, limit = inline): Promise<Text> => {
    const { workflowExecution, activityId } = Context.current().info;
    const stored = await storeText(models, run.id, `${workflowExecution?.runId}.${activityId}.${slot}`, text, limit);
    contents.remember(stored, text);
    return stored;
  };

  const prepare = createPrepare({ deps, contents, loadVersion, store });
  // The questions an MCP server asks during a call go to the run's workflow, the one writer of its record.
  const askInput = createInputAsker(deps.temporal);

  /**
   * This process's provider and tool calls in flight, by run: a cancelled run's workflow stops them at once through
   * `abortRunCalls` when they run in the process that runs the workflow (usually: one worker, or the same sticky
   * worker). Elsewhere Temporal's own cancellation reaches them with their next heartbeat.
   */
  const inFlight = new Map<string, Set<{ abort: () => void; done: Promise<unknown> }>>();
  const tracked = async <T>(run: RunRef, work: (signal: AbortSignal) => Promise<T>, heartbeat?: () => void): Promise<T> => {
    // The call's one signal: Temporal's cancellation (delivered with a heartbeat), or `abortRunCalls`.
    const stop = linkedAbort([Context.current().cancellationSignal]);
    let calls = inFlight.get(run.id);
    if (!calls) inFlight.set(run.id, (calls = new Set()));
    const call = { abort: stop.abort, done: heartbeating(() => work(stop.signal), heartbeat) };
    calls.add(call);
    try {
      return await call.done;
    } finally {
      stop.release();
      calls.delete(call);
      if (calls.size === 0) inFlight.delete(run.id);
    }
  };

  /**
   * A write found the run's record closed: whoever closed it (an earlier attempt of this write whose answer was lost,
   * a call the workflow did not hear, a close from outside) may have stopped before announcing it. Announcing is
   * idempotent, so it is done again: the run's place and webhook are never left. Throws (the write is retried) when
   * it could be neither announced nor noted for the reconciler.
   */
  const announceClosed = async (run: RunRef) => {
    if (!(await runs.announceClosed(run.id))) throw new Error('the store did not answer: the run\'s close could not be announced');
  };

  /**
   * A first call's preparation (`prepare`): undefined when it failed for a reason of its own (the workflow then
   * prepares the run itself, with retries); a template's fault is thrown, the run's end (expanding it again would only
   * take as long again).
   */
  const prepareFirst = async (input: FirstModelCallInput): Promise<Opening | undefined> => {
    try {
      return await prepare({ run: input.run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, at: input.at, ...(input.replay ? { replay: true as const } : {}) });
    } catch (err) {
      if (isTemplateFailure(err)) throw err;
      deps.logger.debug({ run: input.run.id, err }, 'preparing in the first model call failed; the workflow prepares the run itself');
      return undefined;
    }
  };

  return {
    /**
     * Local activity: the workflow's write of its run (status, new entries, new messages). `transition`: the status
     * changed with this write (counted by the worker's metrics). False when the record was closed (nothing written).
     */
    async recordRun(input: RunProgress & { run: RunRef; transition?: boolean; clearText?: true }): Promise<boolean> {
      const { run, transition: _transition, clearText, ...progress } = input;
      const recorded = await runs.record(run, progress);
      // The stored answer replaces the text so far: after a streamed call (the first one's too) the workflow asks
      // (`clearText`). A failed delete leaves it to the reconciler's sweep.
      if (clearText) await clearRunText(models, run.id).catch((err: unknown) => deps.logger.warn({ run: run.id, err }, 'could not delete the text so far of a run'));
      if (!recorded.written || recorded.earlier) {
        // Found closed (from outside; legacy runs: by a call the workflow did not hear), or this very write landed before (an attempt
        // whose answer was lost, a replay): whoever closed it may have stopped before announcing it.
        await announceClosed(run);
        return recorded.written;
      }
      const end = isTerminal(progress.status);
      // An ended run's conversation is not read again: its copy goes, rather than growing by the last messages.
      if (end) contents.forget(run);
      else if (progress.messages) await contents.saved(run, progress.messages.from, progress.messages.items);
      // Retried (a local activity) while the close can be neither announced nor noted for the reconciler.
      if (end && !(await runs.announceClosed(run.id, recorded.closed))) throw new Error('the store did not answer: the run\'s close could not be announced');
      return true;
    },

    /**
     * Local activity: the run's start, prepared, when its first model call could not prepare it (or failed): expands
     * the prompt (in a worker thread, within TEMPLATE_TIMEOUT_MS), lists the profile's tools and stores the prompt;
     * writes no record (the workflow records the start with its next write).
     */
    async prepareStart(input: PrepareInput): Promise<StartedRun> {
      return (await prepare(input)).started;
    },

    /**
     * Local activity, legacy (runs started before 2026-11-28): prepares the run as `prepareStart` does and records it
     * as `running` with its first entries and the prompt as message 0 (one write).
     */
    async prepareRun(input: PrepareInput): Promise<StartedRun> {
      const opening = await prepare(input);
      try {
        await opening.open();
      } catch (err) {
        // Found closed: whoever closed it may have stopped before announcing it, and the workflow now stops.
        if (isRunClosed(err)) await announceClosed(input.run);
        throw err;
      }
      return opening.started;
    },

    /**
     * Remote activity: one provider call with the run's first `messages` messages (given the prompt, `prompt`, when
     * the store does not have it yet), heartbeating while it waits so a lost worker is noticed. Large parts of the
     * answer are stored and returned as references; the run's record is the workflow's to write. (Legacy, runs started
     * before 2026-11-28: a call with `finish` records the run's end when the model answers without tool calls, at
     * entry `entriesFrom`.)
     */
    async callModel(input: ModelCallInput): Promise<ModelTurn & { finishedAt?: number }> {
      // The end's write heartbeats too: a slow store must not make the call look lost (and be made again).
      return tracked(input.run, (signal) => modelCall(input, signal));
    },

    /**
     * Remote activity: a run's first model call, which prepares the run first (as `prepareStart` does), then asks the
     * model as `callModel` does, saving the workflow a local activity (and a workflow task) of its own. With
     * `endsRun`, an answer that ends the run is recorded here with the run's start (`recordFirstEnd`): a quick run's
     * one write, and its workflow completes without a workflow task for it. Otherwise it writes nothing: the workflow
     * records the run's start with its first turn. If preparing fails, the model is not asked: a template's fault is
     * thrown (the run's end); anything else answers `unprepared`, and the workflow prepares the run itself
     * (`prepareStart`, which retries through a store's stall).
     */
    async firstModelCall(input: FirstModelCallInput): Promise<FirstModelCall> {
      return tracked(input.run, async (signal) => {
        const opening = await prepareFirst(input);
        if (!opening) return { unprepared: true };
        const { started } = opening;
        const { runner, model, maxTokens, toolSpecs } = started.prepared;
        const turn = await modelTurn({ run: input.run, taskId: input.taskId, taskVersion: input.taskVersion, model: { runner, model, maxTokens, toolSpecs }, messages: 1, entriesFrom: started.entries.length, finish: false, usage: input.usage }, signal, opening.conversation);
        const finishedAt = input.endsRun ? await recordFirstEnd(input, opening, turn, signal) : undefined;
        return finishedAt === undefined ? { ...turn, started } : { ...turn, started, finishedAt };
      });
    },

    /**
     * Legacy: the first model call of runs started before 2026-11-28 (input without `oneWriter`), which records the run
     * itself: `running` with the first entries RUN_START_WRITE_DELAY_MS into the call, or with the run's end when the
     * model has answered by then (one write). Delete once no such run is open.
     */
    async prepareAndCallModel(input: FirstModelCallInput): Promise<FirstModelCall> {
      return tracked(input.run, async (signal) => {
        const opening = await prepareFirst(input);
        if (!opening) return { unprepared: true };
        const { started } = opening;
        const { runner, model, maxTokens, toolSpecs } = started.prepared;
        const start = delayedOpen(input.run, opening);
        try {
          const turn = await modelCall(
            { run: input.run, taskId: input.taskId, taskVersion: input.taskVersion, model: { runner, model, maxTokens, toolSpecs }, messages: 1, entriesFrom: started.entries.length, finish: true, usage: input.usage, maxTotalTokens: input.maxTotalTokens },
            signal,
            start,
          );
          return { ...turn, started };
        } finally {
          // A failed call returns once its write of `running` has landed or been stopped: none lands after the
          // workflow's own writes (it prepares the run again, the same entries, after a failed first call).
          await start.made().catch(() => undefined);
        }
      });
    },

    /**
     * Local activity: stops this process's calls in flight of a cancelled run (see `tracked`), and waits (a few
     * seconds at most) until they have: a model call writing the run's end finishes that write before the workflow
     * writes the cancel, which then finds the record closed and leaves it. Returns how many it stopped.
     */
    async abortRunCalls(input: { run: RunRef }): Promise<number> {
      const calls = [...(inFlight.get(input.run.id) ?? [])];
      for (const call of calls) call.abort();
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(calls.map((c) => c.done)), new Promise((r) => (waited = setTimeout(r, ABORT_WAIT_MS)))]);
      clearTimeout(waited);
      return calls.length;
    },

    /** Remote activity: one tool call in its servlet's sandbox (heartbeating too). Servlet faults come back as `isError` results. */
    async callTool(input: Omit<ToolCallInput, 'arguments'> & { run: RunRef; arguments: Text; callId?: string }): Promise<ToolOutcome> {
      const { run, callId, ...call } = input;
      const args = JSON.parse(await contents.text(call.arguments)) as Record<string, unknown>;
      const traced = { tool: call.tool, callId, kind: 'servlet' as const, install: call.install, capture: deps.config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, arguments: args };
      const result = await traceToolCall(traced, () => tracked(run, (signal) => deps.callTool({ ...call, arguments: args }, signal)), (r) => r);
      return outcome(run, result);
    },

    /**
     * Remote activity on the MCP queue: one tool call on an MCP install's server (activities/mcp-call.ts), its progress
     * heartbeating. The server's faults, and a server not reached after its tries, come back as `isError` results.
     * `sampling`: the run's model, for the server's sampling requests (activities/mcp-sampling.ts), what they used in
     * the outcome's `sampled`.
     */
    async callMcpTool(input: Omit<McpToolCallInput, 'arguments'> & { run: RunRef; arguments: Text; sampling?: SamplingInput; callId?: string }): Promise<ToolOutcome> {
      const { run, sampling, callId, ...call } = input;
      const args = JSON.parse(await contents.text(call.arguments)) as Record<string, unknown>;
      const ctx = Context.current();
      // Every heartbeat of an attempt that began sending says so, for the attempt after it (its worker lost).
      let sending = false;
      const heartbeat = () => ctx.heartbeat(sending ? { sending } : undefined);
      const mayHaveRun = ctx.info.attempt > 1 && (ctx.info.heartbeatDetails as { sending?: boolean } | undefined)?.sending === true;
      let recorded = false;
      const sendingNow = async () => {
        sending = true;
        heartbeat();
        // The SDK sends heartbeats when it sees fit and never says when they landed; a call that must not run twice is
        // sent only once the server has recorded that it is being sent (one round trip, the first send only).
        if (call.idempotent || recorded) return;
        await deps.temporal.activity.heartbeat(ctx.info.taskToken, { sending: true });
        recorded = true;
      };
      const sample = sampling ? { sample: createRunSampler(askProvider, sampling) } : {};
      const ask = (tool: string, params: Parameters<typeof askInput>[2], signal: AbortSignal) => askInput(run, tool, params, signal);
      const traced = { tool: call.tool, callId, kind: 'mcp' as const, install: call.install, capture: deps.config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, arguments: args };
      const { result, said, sampled } = await traceToolCall(
        traced,
        () => tracked(run, (signal) => deps.callMcpTool({ ...call, arguments: args }, { mayHaveRun, signal, heartbeat, sending: sendingNow, ask, ...sample }), heartbeat),
        (r) => r.result,
      );
      return { ...(await outcome(run, result)), ...(said.length ? { said } : {}), ...(sampled ? { sampled } : {}) };
    },

    /** Remote activity on the MCP queue: starts a tool the server runs as an MCP task (activities/mcp-call.ts createMcpTaskSteps). */
    async startMcpTask(input: Omit<McpToolCallInput, 'arguments'> & { run: RunRef; arguments: Text }): Promise<{ task: McpTaskRef & McpTaskState } | { outcome: ToolOutcome }> {
      const { run, ...call } = input;
      const args = JSON.parse(await contents.text(call.arguments)) as Record<string, unknown>;
      const started = await tracked(run, (signal) => deps.mcpTasks.start({ ...call, arguments: args }, signal));
      return 'task' in started ? started : { outcome: await outcome(run, started.result) };
    },

    /** Remote activity on the MCP queue: the task's state (`tasks/get`), or the outcome the model hears when it is lost. */
    async followMcpTask(input: McpTaskStep): Promise<McpTaskState | { outcome: ToolOutcome }> {
      const { run, ...step } = input;
      const state = await tracked(run, (signal) => deps.mcpTasks.follow(step, signal));
      return 'result' in state ? { outcome: await outcome(run, state.result) } : state;
    },

    /** Remote activity on the MCP queue: the ended task's result (`tasks/result`), as a tool outcome. */
    async mcpTaskResult(input: McpTaskStep): Promise<ToolOutcome> {
      const { run, ...step } = input;
      return outcome(run, await tracked(run, (signal) => deps.mcpTasks.result(step, signal)));
    },

    /**
     * Remote activity on the MCP queue: a task waiting for input (`input_required`) has its questions asked of a person
     * (as a call's are), then gives its outcome, or its state when it goes on working.
     */
    async answerMcpTask(input: McpTaskStep): Promise<McpTaskState | { outcome: ToolOutcome }> {
      const { run, ...step } = input;
      const got = await tracked(run, (signal) => deps.mcpTasks.answer(step, signal, (tool, params, s) => askInput(run, tool, params, s)));
      return 'content' in got ? { outcome: await outcome(run, got) } : got;
    },

    ...createReplayToolActivities({ models, outcome }),

    /** Remote activity on the MCP queue: asks the server to stop the task (a cancelled run, or one out of time). */
    async cancelMcpTask(input: McpTaskStep): Promise<void> {
      const { run: _run, ...step } = input;
      await deps.mcpTasks.cancel(step);
    },
  };

  /** A tool's result as the workflow keeps it: one text as that text, anything else as its JSON; large parts stored. */
  async function outcome(run: RunRef, result: CallToolResult): Promise<ToolOutcome> {
    const isError = Boolean(result.isError);
    const only = result.content.length === 1 ? result.content[0] : undefined;
    if (only?.type === 'text') {
      const text = await store(run, 'result', only.text);
      return { isError, message: { text }, shown: text };
    }
    const shownText = result.content.map((c) => (c.type === 'text' ? c.text : `[image ${c.mimeType}, ${base64Bytes(c.data)} bytes]`)).join('\n');
    return { isError, message: { json: await store(run, 'result', JSON.stringify(result)) }, shown: await store(run, 'shown', shownText) };
  }

  /** Legacy (`prepareAndCallModel`): a first call's write of `running` (`opening.open`), deferred by RUN_START_WRITE_DELAY_MS (the recorder's deferStart). */
  function delayedOpen(run: RunRef, opening: Opening) {
    const onStoreFailure = (err: unknown) =>
      deps.logger.warn({ run: run.id, err }, 'could not record a run as running during its first model call; it is written with the call\'s outcome');
    return { opening, ...deferStart(() => opening.open(), deps.config.RUN_START_WRITE_DELAY_MS, onStoreFailure) };
  }

  /**
   * A first call's answer that ends the run (no tool calls, within the token budget), recorded with the run's start:
   * one write through the recorder, while the record is open; its close announced. Returns when the run ended, or
   * undefined when the answer does not end it, or its write did not land (the workflow then records the start and the
   * end itself: the same entries, so a write of this one applied late says the same). Throws RunClosed when the
   * record was found closed (a cancel's end was first: the record's account stands).
   */
  async function recordFirstEnd(input: FirstModelCallInput, opening: Opening, turn: ModelTurn, signal: AbortSignal): Promise<number | undefined> {
    const usage = addModelCall(input.usage, turn.usage);
    if (turn.toolCalls.length > 0 || !withinBudget(input.maxTotalTokens, usage)) return undefined;
    // Cancelled meanwhile: the workflow writes the cancel (abortRunCalls waits for this call to stop first).
    signal.throwIfAborted();
    const finishedAt = Date.now();
    let recorded: Recorded;
    try {
      recorded = await runs.record(input.run, startWithEnd(opening.progress, { status: 'ready', modifiedAt: finishedAt, entry: finalEntry(turn.text), usage }));
    } catch (err) {
      // The model has answered: failing now would call it again.
      deps.logger.warn({ run: input.run.id, err }, 'could not record the run\'s end with its first answer; the workflow records it');
      return undefined;
    }
    return (await endRecorded(input.run, recorded, turn)) ? finishedAt : undefined;
  }

  /**
   * After a model call's write of the run's end: found closed, its close is announced again and the call throws
   * RunClosed (the record's account stands); written, the run's copies go and its close is announced. False when that
   * could be neither announced nor noted for the reconciler (the store stopped answering): the workflow then writes
   * the end itself, which finds the record closed and announces it (retried until it can).
   */
  async function endRecorded(run: RunRef, recorded: Recorded, turn: ModelTurn): Promise<boolean> {
    if (!recorded.written) {
      await announceClosed(run);
      throw runFailure('RunClosed', 'the run had already ended');
    }
    contents.forget(run);
    if (turn.streamed) await clearRunText(models, run.id).catch((err: unknown) => deps.logger.warn({ run: run.id, err }, 'could not delete the text so far of a run'));
    return runs.announceClosed(run.id, recorded.closed);
  }

  /** Whether a call's answer keeps its run within `maxTotalTokens` (past it, the answer is the run's failure). */
  function withinBudget(maxTotalTokens: number | null | undefined, usage: RunUsage): boolean {
    return !(maxTotalTokens && usage.input_tokens + usage.output_tokens > maxTotalTokens);
  }

  /**
   * One model call of a run (callModel's work): the provider call. Legacy (runs started before 2026-11-28, also the
   * first call's after preparing): the run's end when the call may write it. `start`: the first call's delayed write of `running`; unless it was made
   * meanwhile, the start is written here, with the end (one write) or, when the call does not end the run, before it
   * returns.
   */
  async function modelCall(input: ModelCallInput, signal: AbortSignal, start?: ReturnType<typeof delayedOpen>): Promise<ModelTurn & { finishedAt?: number }> {
    // A call that may end the run is made again when the workflow did not hear how the last one ended (a worker
    // or Temporal lost meanwhile): if that one recorded the run's end, it stands, and the model is not asked again.
    // A turn's first call skips the read (its end's write checks the record anyway).
    if (input.finish && input.again && !(await findOpenRecord(models, input.run))) {
      await announceClosed(input.run);
      throw runFailure('RunClosed', 'the run had already ended');
    }
    const known = start?.opening.conversation ?? (input.prompt !== undefined ? [{ role: 'user' as const, text: await contents.text(input.prompt) }] : undefined);
    const turn = await modelTurn(input, signal, known);
    const usage = addModelCall(input.usage, turn.usage);
    // Past the token budget the answer is the run's failure, which the workflow records.
    const ends = input.finish && turn.toolCalls.length === 0 && withinBudget(input.maxTotalTokens, usage);
    // The run's start, when its delayed write was not made: written with the end, or now (the workflow counts it written).
    const opening = start && !(await start.made()) ? start.opening : undefined;
    if (!ends) {
      await opening?.open();
      return turn;
    }
    // Cancelled meanwhile: the workflow writes the cancel (abortRunCalls waits for this call to stop first).
    signal.throwIfAborted();
    const finishedAt = Date.now();
    const final = finalEntry(turn.text);
    let recorded: Recorded;
    try {
      recorded = await runs.record(
        input.run,
        opening
          ? startWithEnd(opening.progress, { status: 'ready', modifiedAt: finishedAt, entry: final, usage })
          : { status: 'ready', modifiedAt: finishedAt, entries: { from: input.entriesFrom, items: [final] }, usage },
      );
    } catch (err) {
      // The model has answered: failing now would call it again. The workflow records the end instead (its own
      // write, retried), at the same entry, so a write of this one applied late (a stalled store) says the same.
      deps.logger.warn({ run: input.run.id, err }, 'could not record the run\'s end with its final answer; the workflow records it');
      // The workflow counts the run's start as written. If this fails too, so does the call: the workflow then
      // prepares the run again and asks the model again. Finding the record closed (the end's write landed after
      // all, its answer lost), it throws RunClosed: the record's account stands.
      await opening?.open();
      return turn;
    }
    return (await endRecorded(input.run, recorded, turn)) ? { ...turn, finishedAt } : turn;
  }

  /**
   * The provider call itself, and the storing of its answer's large parts. `known`: the conversation, when the caller
   * has it (a first call, whose prompt the store may not have yet); else read through the worker's copies.
   */
  async function modelTurn(input: ModelCallInput, signal: AbortSignal, known?: Turn[]): Promise<ModelTurn> {
    const { model } = input;
    const conversation = known ?? (await contents.conversation(input.run, input.messages));
    const tools = JSON.parse(await contents.text(model.toolSpecs)) as ToolSpec[];
    // The call streams unless PROVIDER_STREAM is off; its text so far is written, to its own document (never to the
    // result or heartbeats: history), only while the run is followed, asked of the polled set as the text arrives.
    const { activityId, attempt } = Context.current().info;
    const runId = input.run.id;
    const text =
      deps.config.PROVIDER_STREAM === 'off'
        ? undefined
        : runTextWriter((t) => writeRunText(models, runId, { call: `${activityId}/${attempt}`, text: t }), () => deps.followed?.has(runId) === true, deps.logger, runId);
    let answer: ProviderAnswer;
    try {
      answer = await askProvider({ taskId: input.taskId, taskVersion: input.taskVersion, runner: model.runner }, { model: model.model, maxTokens: model.maxTokens, conversation, tools, signal, onText: text?.onText });
    } catch (err) {
      // A failed call's text is no answer: its followers get a reset, and a retry nobody follows leaves nothing behind.
      if (await text?.stop()) await clearRunText(models, runId).catch((e: unknown) => deps.logger.warn({ run: runId, err: e }, 'could not delete the text so far of a run'));
      throw err;
    }
    const streamed = (await text?.flush()) ? { streamed: true as const } : {};
    return {
      ...streamed,
      usage: answer.usage,
      text: await store(input.run, 'text', answer.text),
      toolCalls: await Promise.all(
        answer.toolCalls.map(async (c, i) => ({
          id: c.id,
          name: c.name,
          arguments: await store(input.run, `args${i}`, JSON.stringify(c.arguments)),
          shown: await store(input.run, `call${i}`, JSON.stringify({ tool: c.name, arguments: c.arguments })),
        })),
      ),
    };
  }

  /**
   * The task's provider called with the task's key: the one place a run's key is opened (for a model call, or an MCP
   * server's sampling request), used for this call and dropped. Throws NoKey, or the provider's failure (providers/errors.ts).
   */
  async function askProvider(task: { taskId: string; taskVersion: number; runner: Runner }, request: ProviderRequest): Promise<ProviderAnswer> {
    const version = await loadVersion(task.taskId, task.taskVersion);
    let key: string;
    try {
      key = openTaskKey(deps.keyring, deps.config, version, task.runner);
    } catch (err) {
      throw runFailure('NoKey', (err as Error).message);
    }
    const call = { ...request, key, fetch: deps.providerFetch, timeoutMs: deps.config.PROVIDER_TIMEOUT_MS };
    const maxTokens = task.runner === 'openai' ? request.maxTokens : (request.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS);
    const traced = { system: task.runner, model: request.model, maxTokens, capture: deps.config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, prompt: () => promptOf(request) };
    return traceChat(traced, () =>
      task.runner === 'openai'
        ? callOpenAI({ ...call, baseURL: deps.config.OPENAI_BASE_URL })
        : callAnthropic({ ...call, baseURL: deps.config.ANTHROPIC_BASE_URL, maxTokens: request.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS }),
    );
  }

  /** Runs a remote activity's work, heartbeating while it waits so a lost worker is noticed within the heartbeat timeout. */
  async function heartbeating<T>(work: () => Promise<T>, heartbeat?: () => void): Promise<T> {
    const ctx = Context.current();
    // A third of the heartbeat timeout: a call shorter than that sends none (the SDK also spaces them out).
    const beat = setInterval(heartbeat ?? (() => ctx.heartbeat()), Math.max(200, (ctx.info.heartbeatTimeoutMs ?? 30_000) / 3));
    try {
      return await work();
    } finally {
      clearInterval(beat);
    }
  }
}

/** A provider request's messages as a captured prompt (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT): images by type only. */
function promptOf(request: ProviderRequest): unknown {
  return [...(request.system ? [{ role: 'system', text: request.system }] : []), ...request.conversation.map((turn) => ('images' in turn && turn.images?.length ? { ...turn, images: turn.images.map((i) => i.mimeType) } : turn))];
}

export type RunActivities = ReturnType<typeof createRunActivities>;
