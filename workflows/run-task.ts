import { ActivityFailure, CancellationScope, continueAsNew, isCancellation, workflowInfo } from '@temporalio/workflow';
import { addModelCall, addSampled, finalEntry } from '../src/contract/constants';
import { readFailure } from '../src/contract/failures';
import type { RunInput, RunOutcome, RunRef, RunStatus, Text } from '../src/contract/types';
import { RunClock, RunFailed } from './run-clock';
import { RunControls } from './run-controls';
import { RunLog } from './run-log';
import { RunStart, type FirstOutcome } from './run-start';
import { RecordClosed, recordClosed, RunSteps, type RunParts } from './run-steps';

/** How the run's conversation ended: the model's answer (recorded by its call when `finishedAt`: a first call's, or a legacy run's), or a continue-as-new. */
type Ending = { kind: 'answer'; text: Text; finishedAt?: number } | { kind: 'continue'; turn: number };

/**
 * One run of a task: prepare it, ask the model, run the tools it asks for, until it answers without tool calls.
 * Contents stay out of history: activities store what they produce and return references, the conversation is stored
 * once and a model call is given only its length. Every write goes through the recorder (src/runs/recorder.ts): the
 * workflow writes the entries as they accumulate (at every status change and every turn, in a local activity), except
 * a quick run's one write, its start with its end, which its first model call makes (run-start.ts). A long run
 * continues as new under the same workflow id.
 */
export async function runTask(input: RunInput): Promise<RunOutcome> {
  // Runs triggered before 2026-11-28 have their model calls record the run's start and end (their input says so, and
  // a continue-as-new keeps it): a run's every execution takes one path.
  const legacy = input.oneWriter !== true;
  const { resume, limits } = input;
  const log = new RunLog(
    resume
      ? { createdAt: input.createdAt, entries: resume.entries, messages: resume.messages, at: Date.now(), status: 'running', usage: resume.usage }
      : { createdAt: input.createdAt, entries: 0, messages: 0, at: input.createdAt },
  );
  const controls = new RunControls(log);
  const run: RunRef = { id: workflowInfo().workflowId, createdAt: input.createdAt };
  const clock = new RunClock(resume?.deadline ?? Date.now() + limits.timeoutMs, limits.timeoutMs);
  const parts: RunParts = { input, run, log, clock, controls, legacy };
  const steps = new RunSteps(parts);
  const start = new RunStart(parts, steps);

  let ending: Ending | undefined;
  try {
    ending = await controls.work.run(() => converse(parts, steps, start));
  } catch (err) {
    if (recordClosed(err)) return endedElsewhere(log);
    const reason = await failedRun(err, parts, steps, start);
    if (reason === undefined) return endedElsewhere(log);
    log.push({ msg: reason, error: reason, lastMessage: { role: 'system', content: reason } });
  }
  if (ending?.kind === 'continue') {
    // Everything is recorded (the turn ended with a write); the next execution starts from the store.
    const next = { deadline: clock.deadline, turn: ending.turn, prepared: start.prepared!, entries: log.total, messages: log.messages, continued: (resume?.continued ?? 0) + 1, usage: log.usage, ...(input.replay ? { replayUsed: steps.replayUsed } : {}) };
    return continueAsNew<typeof runTask>({ ...input, payload: undefined, resume: next });
  }
  if (ending?.finishedAt !== undefined) {
    // The model call recorded the run's end itself: a first call's answer (`firstCallEnds`), or a legacy run's call.
    log.status = 'ready';
    log.pushRecorded([finalEntry(ending.text)], ending.finishedAt);
    return { status: 'ready', entries: log.total };
  }
  let status: RunStatus = 'error';
  if (ending) {
    status = 'ready';
    log.push(finalEntry(ending.text));
  }
  // Recorded even when the workflow itself is being cancelled (task deleted), so the record says why it ended.
  try {
    await CancellationScope.nonCancellable(() => steps.record(status));
  } catch (err) {
    if (err instanceof RecordClosed) return endedElsewhere(log);
    throw err;
  }
  return { status, entries: log.total };
}

/**
 * The conversation: the first call (which prepares the run), then turns of the model's answer and the tools it asks
 * for, each turn's entries and messages recorded before the next model call reads them.
 */
async function converse(parts: RunParts, steps: RunSteps, start: RunStart): Promise<Ending> {
  const { input, log } = parts;
  const { limits } = input;
  let first: FirstOutcome = {};
  if (!start.prepared) {
    first = await start.firstCall(input.runner);
    // Legacy runs: the first call prepares the run; when it could not (or failed), the run is prepared here.
    if (!start.prepared) await start.prepareHere();
  }
  const prepared = start.prepared!;
  const firstTurn = input.resume?.turn ?? 1;
  for (let turn = firstTurn; turn <= limits.maxTurns; turn++) {
    if (turn > firstTurn && historyIsLong(limits.continueAsNewEvents)) return { kind: 'continue', turn };
    // The first call's answer, or its failure as this turn's first attempt; later turns call the model themselves.
    const answer = first.answer ?? (await steps.askModel(prepared, first.failure));
    first = {};
    log.usage = addModelCall(log.usage, answer.usage);
    checkBudget(parts);
    if (answer.toolCalls.length === 0) return { kind: 'answer', text: answer.text, finishedAt: answer.finishedAt };
    if (answer.text !== '') log.push({ msg: 'assistant', exchange: { role: 'assistant', content: answer.text } });
    log.addMessage({ role: 'assistant', text: answer.text, toolCalls: answer.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })) });
    // The record has the run's start (with this answer) before its first tools run, which may take long.
    if (log.unrecordedPrompt !== undefined) await steps.record();
    for (const call of answer.toolCalls) {
      log.push({ msg: `tool call: ${call.name}`, exchange: { role: 'assistant', content: call.shown } });
      const outcome = await steps.callTool(prepared, call);
      for (const said of outcome.said ?? []) log.push(said);
      log.push({ msg: `tool result: ${call.name}${outcome.isError ? ' (error)' : ''}`, exchange: { role: 'tool', content: outcome.shown }, ...(outcome.replayed ? { replayed: true as const } : {}) });
      log.addMessage({ role: 'tool', callId: call.id, name: call.name, isError: outcome.isError, ...outcome.message });
      // The MCP server's sampling requests were model calls of the run, on its budget (docs/mcp.md, "Sampling").
      if (outcome.sampled) {
        log.usage = addSampled(log.usage, outcome.sampled);
        checkBudget(parts);
      }
    }
    await steps.record();
  }
  throw new RunFailed(`the run reached its turn limit of ${limits.maxTurns} model calls without a final answer`);
}

/** Throws the run's failure when its usage has passed its token budget (`limits.maxTotalTokens`). */
function checkBudget({ input, log }: RunParts): void {
  const { maxTotalTokens } = input.limits;
  const used = log.usage.input_tokens + log.usage.output_tokens;
  if (maxTotalTokens && used > maxTotalTokens) throw new RunFailed(`token budget of ${maxTotalTokens} exceeded (the run used ${used} tokens)`);
}

/**
 * The reason a run that failed (or was cancelled) shows, once what it needs before its end is written is done: a
 * cancelled run's calls in flight stopped, and a run ended during its first call prepared (legacy runs: prepared
 * again, so the end goes after the first entries the call recorded). Undefined when the record turned out closed
 * meanwhile (its account stands).
 */
async function failedRun(err: unknown, parts: RunParts, steps: RunSteps, start: RunStart): Promise<string | undefined> {
  const cancelled = isCancellation(err);
  const by = parts.controls.cancelledBy;
  const reason = err instanceof RunFailed ? err.message : cancelled ? (by !== undefined ? `cancelled by ${by}` : 'the run was cancelled') : readFailure(err, { name: 'the run', kind: 'other' }).reason;
  // A call of this run in flight in this worker stops now; in another worker, at its next heartbeat.
  if (cancelled) await CancellationScope.nonCancellable(() => steps.abortCalls()).catch(() => undefined);
  // A run ended during its first call (cancelled, or out of time) is prepared here, so its record shows its prompt
  // before the end. Legacy runs: the first call may have recorded the first entries (the end must go after them),
  // unless preparing again is what just failed.
  const prepareFirst = parts.legacy
    ? start.unheard && (cancelled || !(err instanceof ActivityFailure && err.activityType === 'prepareRun'))
    : !start.prepared && (cancelled || err instanceof RunFailed);
  if (prepareFirst) {
    try {
      await CancellationScope.nonCancellable(() => (parts.legacy ? start.prepareHere() : start.prepare()));
    } catch (prepareErr) {
      if (recordClosed(prepareErr)) return undefined;
      // Not prepared (its own failure, logged by the worker): the end goes after what this view has.
    }
  }
  return reason;
}

/** The run's end is the record's (RecordClosed): the view keeps only what the record has. */
function endedElsewhere(log: RunLog): RunOutcome {
  log.discardUnrecorded();
  return { status: log.status, entries: log.total, closedElsewhere: true };
}

/** Past RUN_CONTINUE_AS_NEW_EVENTS events, or when Temporal suggests it (history size or length) if that is 0. */
function historyIsLong(maxEvents: number): boolean {
  const info = workflowInfo();
  return maxEvents > 0 ? info.historyLength >= maxEvents : info.continueAsNewSuggested;
}
