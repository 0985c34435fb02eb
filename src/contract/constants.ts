/** Runtime constants of runs, shared by the workflows, the activities, the store and the API (no I/O, nothing from Node). */
import type { LastEntry, RunIdentity, RunStatus, RunUsage, Text } from './types';

/** The model providers a task may run on. */
export const RUNNERS = ['openai', 'anthropic'] as const;

/**
 * A run's workflow id, the same string as its record's `_id`: names cannot contain "/" (store/names.ts), so
 * `run/<owner>/<profile>/<task>/<run>` is unambiguous and reads well in the Web UI.
 */
export const runWorkflowId = (id: RunIdentity) => `run/${id.owner}/${id.profile}/${id.task}/${id.run}`;

/** The owner in a run's workflow id (`runWorkflowId`), or undefined when `id` is not one. */
export const runOwnerOf = (id: string): string | undefined => /^run\/([^/]+)\/[^/]+\/[^/]+\/[^/]+$/.exec(id)?.[1];

export const TERMINAL: readonly RunStatus[] = ['ready', 'error'];

export const isTerminal = (status: string): boolean => (TERMINAL as readonly string[]).includes(status);

/** Pino's numbers, which the contract's `level` field carries. */
export const LEVEL = { info: 30, warn: 40, error: 50 } as const;

/**
 * The task queue of tool (servlet) calls beside a workers' queue: tools compute and provider calls wait, so each has
 * its own queue with its own limit on the same workers (src/temporal/worker.ts).
 */
export const toolTaskQueue = (taskQueue: string) => `${taskQueue}.tools`;
/**
 * MCP tool calls' queue: a call waits on the network, not on this machine's CPU as a servlet's does, so it has slots of
 * its own (WORKER_MAX_MCP_CALLS) on the same workers.
 */
export const mcpTaskQueue = (taskQueue: string) => `${taskQueue}.mcp`;

/** The entry that ends a run that the model answered. */
export const finalEntry = (text: Text): LastEntry<Text> => ({ msg: 'final answer', lastMessage: { role: 'assistant', content: text } });

/** A run's usage before its first model call (and of records written before usage was counted). */
export const NO_USAGE: Readonly<RunUsage> = Object.freeze({ input_tokens: 0, output_tokens: 0, model_calls: 0, tool_calls: 0 });

/** `usage` with one more model call that used `tokens`. */
export const addModelCall = (usage: RunUsage, tokens: { input: number; output: number }): RunUsage => ({
  ...usage,
  input_tokens: usage.input_tokens + tokens.input,
  output_tokens: usage.output_tokens + tokens.output,
  model_calls: usage.model_calls + 1,
});

/** `usage` with what an MCP server's sampling requests during a tool call used: each request is a model call. */
export const addSampled = (usage: RunUsage, sampled: { input: number; output: number; calls: number }): RunUsage => ({
  ...usage,
  input_tokens: usage.input_tokens + sampled.input,
  output_tokens: usage.output_tokens + sampled.output,
  model_calls: usage.model_calls + sampled.calls,
});
