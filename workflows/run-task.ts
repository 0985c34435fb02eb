import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  defineQuery,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { Activities } from '../activities';
import { PREPARE, RECORD, TOOL_CALL, providerCall } from './limits';
import {
  LEVEL,
  type CallToolResult,
  type ModelAnswer,
  type ProviderFailureDetails,
  type ResultEntry,
  type RunInput,
  type RunState,
  type RunStatus,
  type ToolCall,
  type Turn,
} from './types';

export const runQuery = defineQuery<RunState>('run');

/** A failure that ends the run in `error` with this message as the reason. */
class RunFailed extends Error {}

/**
 * One run of a task: expand the prompt, call the provider, run the tools it asks for, until it answers without tool
 * calls. The run's state lives here and is read with the `run` query; the record in MongoDB is written at every
 * status change so closed runs (and lists) are served without Temporal.
 */
export async function runTask(input: RunInput): Promise<RunState> {
  const state: RunState = { status: 'pending', results: [], modifiedAt: input.createdAt };
  setHandler(runQuery, () => state);

  // The time limit is a deadline every remote call is bounded by (no timer of its own: one history event, one timer
  // task and a racing scope fewer per run). Local bookkeeping has its own bounds.
  const deadline = Date.now() + input.limits.timeoutMs;
  const timeLimit = () => new RunFailed(`the run exceeded its time limit of ${Math.round(input.limits.timeoutMs / 1000)} s`);
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

  const { recordRun } = proxyLocalActivities<Activities>(RECORD);
  const providerOptions = providerCall(input.limits.providerHeartbeatMs, input.limits.providerCallMs);

  const push = (...entries: ResultEntry[]) => {
    state.results.push(...entries);
    state.modifiedAt = Date.now();
  };
  const setStatus = (status: RunStatus) => {
    state.status = status;
    state.modifiedAt = Date.now();
    return recordRun({ identity: input.identity, state });
  };

  const execute = async (): Promise<string> => {
    // Prepare records the run as `running` with its first entries (run started, warnings, tools, prompt).
    const { prepared, entries, at } = await proxyLocalActivities<Activities>(PREPARE).prepareRun({ taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, identity: input.identity });
    state.status = 'running';
    state.results.push(...entries);
    state.modifiedAt = at;

    const conversation: Turn[] = [{ role: 'user', text: prepared.prompt }];
    for (let turn = 1; turn <= input.limits.maxTurns; turn++) {
      const call = { taskId: input.taskId, taskVersion: input.taskVersion, runner: prepared.runner, model: prepared.model, maxTokens: prepared.maxTokens, conversation, tools: prepared.tools };
      let answer: ModelAnswer | undefined;
      // Retryable provider failures are retried here with backoff; the run shows `pending` while it waits.
      for (let attempt = 1; !answer; attempt++) {
        try {
          answer = await proxyActivities<Activities>(bounded(providerOptions)).callModel(call);
        } catch (err) {
          if (isCancellation(err)) throw err;
          const failure = past(err);
          if (failure instanceof RunFailed) throw failure;
          const { retryable, reason, retryAfterMs } = describeFailure(failure);
          if (!retryable) throw new RunFailed(reason);
          const { initialMs, maxMs, maxAttempts } = input.limits.retry;
          if (attempt >= maxAttempts) throw new RunFailed(`${reason} (gave up after ${attempt} attempts)`);
          const wait = Math.min(maxMs, Math.max(retryAfterMs ?? 0, initialMs * 2 ** (attempt - 1)));
          push({ msg: `${reason}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})`, time: Date.now(), level: LEVEL.warn });
          await setStatus('pending');
          await sleep(Math.max(1, Math.min(wait, deadline - Date.now())));
          if (deadline - Date.now() <= 0) throw timeLimit();
          await setStatus('running');
        }
      }
      conversation.push({ role: 'assistant', text: answer.text, toolCalls: answer.toolCalls });
      if (answer.toolCalls.length === 0) return answer.text;
      if (answer.text) push({ msg: 'assistant', exchange: { role: 'assistant', content: answer.text } });
      const results: Array<{ call: ToolCall; result: CallToolResult }> = [];
      for (const toolCall of answer.toolCalls) {
        push({ msg: `tool call: ${toolCall.name}`, exchange: { role: 'assistant', content: JSON.stringify({ tool: toolCall.name, arguments: toolCall.arguments }) } });
        const spec = prepared.tools.find((t) => t.name === toolCall.name);
        let result: CallToolResult;
        if (!spec) result = { content: [{ type: 'text', text: `unknown tool "${toolCall.name}"` }], isError: true };
        else {
          try {
            result = await proxyActivities<Activities>(bounded(TOOL_CALL)).callTool({ owner: input.identity.owner, profile: input.identity.profile, install: spec.install, tool: spec.tool, arguments: toolCall.arguments });
          } catch (err) {
            const failure = past(err);
            if (failure instanceof RunFailed || isCancellation(failure)) throw failure;
            throw new RunFailed(`tool ${toolCall.name} failed: ${describeFailure(failure, 'tool').reason}`);
          }
        }
        const text = result.content.map((c) => (c.type === 'text' ? c.text : `[image ${c.mimeType}]`)).join('\n');
        push({ msg: `tool result: ${toolCall.name}${result.isError ? ' (error)' : ''}`, exchange: { role: 'tool', content: text } });
        results.push({ call: toolCall, result });
      }
      conversation.push({ role: 'tool', results });
    }
    throw new RunFailed(`the run reached its turn limit of ${input.limits.maxTurns} model calls without a final answer`);
  };

  let status: RunStatus;
  try {
    const text = await execute();
    status = 'ready';
    push({ msg: 'final answer', lastMessage: { role: 'assistant', content: text } });
  } catch (err) {
    const reason = err instanceof RunFailed ? err.message : isCancellation(err) ? 'the run was cancelled' : describeFailure(err).reason;
    status = 'error';
    push({ msg: reason, error: reason, lastMessage: { role: 'system', content: reason } });
  }
  // Recorded even when the workflow itself is being cancelled (task deleted), so the record says why it ended.
  await CancellationScope.nonCancellable(() => setStatus(status));
  return state;
}

/** `call`: what failed, for the wording of a timeout (a provider call's reasons are what its tests and docs quote). */
function describeFailure(err: unknown, call: 'provider' | 'tool' = 'provider'): { retryable: boolean; reason: string; retryAfterMs?: number } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const details = (cause.details?.[0] ?? {}) as ProviderFailureDetails;
    return { retryable: !cause.nonRetryable, reason: cause.message, retryAfterMs: details.retryAfterMs };
  }
  if (cause instanceof TimeoutFailure) {
    const lost = cause.timeoutType === TimeoutType.HEARTBEAT;
    return { retryable: true, reason: call === 'provider' ? (lost ? 'the worker calling the provider was lost' : 'the provider call timed out') : lost ? 'the worker running it was lost' : 'it timed out' };
  }
  return { retryable: false, reason: cause instanceof Error ? cause.message : String(cause) };
}
