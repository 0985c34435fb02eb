/** Runtime constants of runs, shared by the workflow and the API (deterministic: no I/O, nothing from Node). */
import type { LastEntry, RunStatus, Text } from './types';

export const TERMINAL: readonly RunStatus[] = ['ready', 'error'];

export const isTerminal = (status: string): boolean => (TERMINAL as readonly string[]).includes(status);

/** Pino's numbers, which the contract's `level` field carries. */
export const LEVEL = { info: 30, warn: 40, error: 50 } as const;

/**
 * The task queue of tool (servlet) calls beside a workers' queue: tools compute and provider calls wait, so each has
 * its own queue with its own limit on the same workers (src/temporal/worker.ts).
 */
export const toolTaskQueue = (taskQueue: string) => `${taskQueue}.tools`;

/** The entry that ends a run that the model answered. */
export const finalEntry = (text: Text): LastEntry<Text> => ({ msg: 'final answer', lastMessage: { role: 'assistant', content: text } });
