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

  const { prepareRun } = proxyLocalActivities<Activities>(PREPARE);
  const { recordRun } = proxyLocalActivities<Activities>(RECORD);
  const { callModel } = proxyActivities<Activities>(providerCall(input.limits.providerHeartbeatMs, input.limits.providerCallMs));
  const { callTool } = proxyActivities<Activities>(TOOL_CALL);

  const push = (...entries: ResultEntry[]) => {
    state.results.push(...entries);
    state.modifiedAt = Date.now();
  };
  const log = (msg: string, level: number = LEVEL.info) => push({ msg, time: Date.now(), level });
  const setStatus = async (status: RunStatus) => {
    state.status = status;
    state.modifiedAt = Date.now();
    await recordRun({ identity: input.identity, state });
  };

  const execute = async (): Promise<string> => {
    // Prepare records the run as `running` with its first entries (run started, warnings, tools, prompt).
    const { prepared, entries, at } = await prepareRun({ taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, identity: input.identity });
    state.status = 'running';
    state.results.push(...entries);
    state.modifiedAt = at;

    const conversation: Turn[] = [{ role: 'user', text: prepared.prompt }];
    for (let turn = 1; turn <= input.limits.maxTurns; turn++) {
      const answer = await withRetries(() =>
        callModel({ taskId: input.taskId, taskVersion: input.taskVersion, runner: prepared.runner, model: prepared.model, maxTokens: prepared.maxTokens, conversation, tools: prepared.tools }),
      );
      conversation.push({ role: 'assistant', text: answer.text, toolCalls: answer.toolCalls });
      if (answer.toolCalls.length === 0) return answer.text;
      if (answer.text) push({ msg: 'assistant', exchange: { role: 'assistant', content: answer.text } });
      const results: Array<{ call: ToolCall; result: Awaited<ReturnType<typeof callTool>> }> = [];
      for (const call of answer.toolCalls) {
        push({ msg: `tool call: ${call.name}`, exchange: { role: 'assistant', content: JSON.stringify({ tool: call.name, arguments: call.arguments }) } });
        const spec = prepared.tools.find((t) => t.name === call.name);
        const result = spec
          ? await callTool({ owner: input.identity.owner, profile: input.identity.profile, install: spec.install, tool: spec.tool, arguments: call.arguments })
          : { content: [{ type: 'text' as const, text: `unknown tool "${call.name}"` }], isError: true };
        const text = result.content.map((c) => (c.type === 'text' ? c.text : `[image ${c.mimeType}]`)).join('\n');
        push({ msg: `tool result: ${call.name}${result.isError ? ' (error)' : ''}`, exchange: { role: 'tool', content: text } });
        results.push({ call, result });
      }
      conversation.push({ role: 'tool', results });
    }
    throw new RunFailed(`the run reached its turn limit of ${input.limits.maxTurns} model calls without a final answer`);
  };

  /** Retries retryable provider failures with backoff; the run shows `pending` while it waits. */
  const withRetries = async <T>(call: () => Promise<T>): Promise<T> => {
    const { initialMs, maxMs, maxAttempts } = input.limits.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (isCancellation(err)) throw err;
        const { retryable, reason, retryAfterMs } = describeFailure(err);
        if (!retryable) throw new RunFailed(reason);
        if (attempt >= maxAttempts) throw new RunFailed(`${reason} (gave up after ${attempt} attempts)`);
        const wait = Math.min(maxMs, Math.max(retryAfterMs ?? 0, initialMs * 2 ** (attempt - 1)));
        log(`${reason}; retrying in ${(wait / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})`, LEVEL.warn);
        await setStatus('pending');
        await sleep(wait);
        await setStatus('running');
      }
    }
  };

  const scope = new CancellationScope();
  const outcome = await Promise.race([
    scope.run(execute).then((text) => ({ text }), (err: unknown) => ({ err })),
    sleep(input.limits.timeoutMs).then(() => ({ timedOut: true as const })),
  ]);

  let status: RunStatus;
  if ('text' in outcome) {
    status = 'ready';
    push({ msg: 'final answer', lastMessage: { role: 'assistant', content: outcome.text } });
  } else {
    if ('timedOut' in outcome) scope.cancel();
    const reason =
      'timedOut' in outcome
        ? `the run exceeded its time limit of ${Math.round(input.limits.timeoutMs / 1000)} s`
        : outcome.err instanceof RunFailed
          ? outcome.err.message
          : isCancellation(outcome.err)
            ? 'the run was cancelled'
            : describeFailure(outcome.err).reason;
    status = 'error';
    push({ msg: reason, error: reason, lastMessage: { role: 'system', content: reason } });
  }
  // Recorded even when the workflow itself is being cancelled (task deleted), so the record says why it ended.
  await CancellationScope.nonCancellable(() => setStatus(status));
  return state;
}

function describeFailure(err: unknown): { retryable: boolean; reason: string; retryAfterMs?: number } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const details = (cause.details?.[0] ?? {}) as ProviderFailureDetails;
    return { retryable: !cause.nonRetryable, reason: cause.message, retryAfterMs: details.retryAfterMs };
  }
  if (cause instanceof TimeoutFailure) return { retryable: true, reason: cause.timeoutType === TimeoutType.HEARTBEAT ? 'the worker calling the provider was lost' : 'the provider call timed out' };
  return { retryable: false, reason: cause instanceof Error ? cause.message : String(cause) };
}
