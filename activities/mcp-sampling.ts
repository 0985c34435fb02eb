import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, McpError, type CreateMessageRequest, type CreateMessageResult, type SamplingMessage } from '@modelcontextprotocol/sdk/types.js';
import { ApplicationFailure } from '@temporalio/common';
import { LEVEL } from '../src/contract/constants';
import type { FailureType } from '../src/contract/failures';
import type { ImageItem, ProviderFailureDetails, Runner, SampledUsage, SamplingInput, Turn } from '../src/contract/types';
import { linkedAbort } from './linked-abort';
import type { ProviderAnswer, ProviderRequest, TokenUsage } from './providers/call';
import { scrub } from './providers/errors';

/**
 * An MCP server's sampling requests (`sampling/createMessage`) during a run's tool call, answered with the run's own
 * model (docs/mcp.md, "Sampling"), only when the install's `settings.sampling` is true.
 */

/** The refusal a server hears when its install does not allow sampling. */
export const SAMPLING_OFF = 'sampling is off for this install: set settings.sampling to true';

/**
 * The task's provider called with the task's key, opened for the call and dropped (run-activities.ts `askProvider`).
 * Throws the provider's failure (providers/errors.ts), or NoKey.
 */
export type AskProvider = (task: { taskId: string; taskVersion: number; runner: Runner }, request: ProviderRequest) => Promise<ProviderAnswer>;

/** Answers one sampling request; `sampled`: what the call's earlier requests used. Throws McpError to refuse. */
export type McpSample = (params: CreateMessageRequest['params'], options: { signal: AbortSignal; sampled: SampledUsage }) => Promise<{ result: CreateMessageResult; usage: TokenUsage }>;

/**
 * A sampling request's provider call is tried SAMPLING_ATTEMPTS times while the provider says to try again (429, 5xx, not
 * reached: FAILURES' retryable provider failures), after 1 s, then 2 s, or its `Retry-After` when that is longer, up to
 * SAMPLING_MAX_WAIT_MS: the MCP server waits for the answer meanwhile (the call's idle timer is paused), so a longer
 * wait is not made and the server hears the failure.
 */
const SAMPLING_ATTEMPTS = 3;
const SAMPLING_FIRST_WAIT_MS = 1_000;
const SAMPLING_MAX_WAIT_MS = 10_000;

/** How long to wait before trying a failed sampling call again, or undefined when it is not tried again. */
function retryWait(err: unknown, attempt: number): number | undefined {
  if (attempt >= SAMPLING_ATTEMPTS || !(err instanceof ApplicationFailure)) return undefined;
  const type = err.type as FailureType | undefined;
  if (type !== 'ProviderUnavailable' && type !== 'ProviderUnreachable') return undefined;
  const asked = (err.details?.[0] as ProviderFailureDetails | undefined)?.retryAfterMs ?? 0;
  const wait = Math.max(asked, SAMPLING_FIRST_WAIT_MS * 2 ** (attempt - 1));
  return wait <= SAMPLING_MAX_WAIT_MS ? wait : undefined;
}

/** MCP's stop reasons for the providers' own words; others are passed on as they are. */
const STOP_REASONS: Record<string, string> = { stop: 'endTurn', end_turn: 'endTurn', length: 'maxTokens', max_tokens: 'maxTokens', stop_sequence: 'stopSequence' };

/**
 * A run's sampler for one MCP call: the server's messages (text, and images in user messages), `systemPrompt`,
 * `temperature` and `maxTokens` (at most the task's own max tokens) go to the task's provider and model; the answer
 * comes back as one text. Refused (an McpError) when the run's token budget is already spent, for content the providers
 * do not take (audio, tool use), and when the provider fails: its message, scrubbed of keys, is the server's to read,
 * never the run's failure.
 */
export function createRunSampler(ask: AskProvider, input: SamplingInput): McpSample {
  return async (params, { signal, sampled }) => {
    const { model, usage, maxTotalTokens } = input;
    const used = usage.input_tokens + usage.output_tokens + sampled.input + sampled.output;
    if (maxTotalTokens && used >= maxTotalTokens) {
      throw new McpError(ErrorCode.InvalidRequest, `the run's token budget of ${maxTotalTokens} is spent (it used ${used} tokens)`);
    }
    if (params.tools?.length || params.toolChoice) throw new McpError(ErrorCode.InvalidParams, 'sampling with tools is not supported by this client');
    if (!Number.isInteger(params.maxTokens) || params.maxTokens < 1) throw new McpError(ErrorCode.InvalidParams, 'maxTokens: expected a whole number of at least 1');
    const conversation = params.messages.map(turnOf);
    const request: ProviderRequest = {
      model: model.model,
      maxTokens: Math.min(params.maxTokens, model.maxTokens ?? Infinity),
      conversation,
      tools: [],
      signal,
      ...(params.systemPrompt ? { system: params.systemPrompt } : {}),
      ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
    };
    let answer: ProviderAnswer;
    for (let attempt = 1; ; attempt++) {
      try {
        answer = await ask({ taskId: input.taskId, taskVersion: input.taskVersion, runner: model.runner }, request);
        break;
      } catch (err) {
        signal.throwIfAborted();
        const wait = retryWait(err, attempt);
        if (wait !== undefined) {
          // Stopped with the call: the signal's own reason, as a provider call stopped meanwhile would throw.
          await sleep(wait, undefined, { signal }).catch(() => signal.throwIfAborted());
          continue;
        }
        // A provider's failure is scrubbed of its key where it is made (providers/errors.ts); anything else says no more.
        const reason = err instanceof ApplicationFailure ? scrub(err.message, '') : 'an unexpected error';
        const tries = attempt > 1 ? ` (gave up after ${attempt} attempts)` : '';
        throw new McpError(ErrorCode.InternalError, `the run's model could not answer: ${reason}${tries}`);
      }
    }
    const stopReason = answer.stopReason ? (STOP_REASONS[answer.stopReason] ?? answer.stopReason) : undefined;
    const result: CreateMessageResult = { role: 'assistant', content: { type: 'text', text: answer.text }, model: model.model, ...(stopReason ? { stopReason } : {}) };
    return { result, usage: answer.usage };
  };
}

/**
 * The `onSample` of one MCP call (src/mcp/pool.ts McpCallOptions): refused with SAMPLING_OFF unless `allowed`, else
 * answered by `sample` (stopped with the call's `signal`), its tokens added to `sampled` and each request noted in the
 * run's log.
 */
export function samplingAnswerer(options: {
  allowed: boolean;
  sample: McpSample | undefined;
  signal: AbortSignal;
  sampled: SampledUsage;
  note(level: number, text: string): void;
}) {
  const { sampled, note } = options;
  const answer = async (params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult> => {
    if (!options.allowed) throw new McpError(ErrorCode.InvalidRequest, SAMPLING_OFF);
    if (!options.sample) throw new McpError(ErrorCode.InvalidRequest, 'sampling is not offered to this call');
    const { result, usage } = await options.sample(params, { signal, sampled: { ...sampled } });
    sampled.input += usage.input;
    sampled.output += usage.output;
    sampled.calls += 1;
    note(LEVEL.info, `sampling: the run's model answered (${usage.input} input and ${usage.output} output tokens)`);
    return result;
  };
  return async (params: CreateMessageRequest['params'], requestSignal: AbortSignal): Promise<CreateMessageResult> => {
    const stop = linkedAbort([options.signal, requestSignal]);
    try {
      return await answer(params, stop.signal);
    } catch (err) {
      note(LEVEL.warn, `sampling not answered: ${err instanceof McpError ? err.message.replace(/^MCP error -?\d+: /, '') : 'an unexpected error'}`);
      throw err;
    } finally {
      stop.release();
    }
  };
}

/** A sampling message as a provider turn. Throws McpError for content the providers do not take in that role. */
function turnOf(message: SamplingMessage): Turn {
  const blocks = Array.isArray(message.content) ? message.content : [message.content];
  const texts: string[] = [];
  const images: ImageItem[] = [];
  for (const block of blocks) {
    if (block.type === 'text') texts.push(block.text);
    else if (block.type === 'image' && message.role === 'user') images.push({ type: 'image', data: block.data, mimeType: block.mimeType });
    else throw new McpError(ErrorCode.InvalidParams, `sampling: ${block.type} content in a${message.role === 'user' ? ' user' : 'n assistant'} message is not supported by this client`);
  }
  const text = texts.join('\n');
  return message.role === 'user' ? { role: 'user', text, ...(images.length ? { images } : {}) } : { role: 'assistant', text, toolCalls: [] };
}
