import type { ToolCall, ToolSpec, Turn } from '../../src/contract/types';
import type { ProviderFetch } from './http';

/** One call of a provider: the conversation so far and the tools on offer. The key is used and dropped. */
export interface ProviderCall {
  key: string;
  /** Pooled connections (providers/http.ts). */
  fetch: ProviderFetch;
  baseURL?: string;
  model: string;
  maxTokens: number | null;
  conversation: Turn[];
  tools: ToolSpec[];
  timeoutMs: number;
  signal: AbortSignal;
}

/** A provider's answer, before the activity stores its large parts. */
export interface ProviderAnswer {
  text: string;
  toolCalls: ToolCall[];
  /** Tokens as the provider reports them (0 where it reports none). */
  usage: TokenUsage;
}

export interface TokenUsage {
  input: number;
  output: number;
}

/** A usage count from a provider's answer: a finite, non-negative number, else 0. */
export const tokens = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

export type ToolTurn = Extract<Turn, { role: 'tool' }>;

/** The conversation with each run of consecutive tool results as one group (one turn's results, in call order). */
export function groupToolResults(conversation: Turn[]): Array<Exclude<Turn, ToolTurn> | ToolTurn[]> {
  const grouped: Array<Exclude<Turn, ToolTurn> | ToolTurn[]> = [];
  for (const turn of conversation) {
    if (turn.role !== 'tool') grouped.push(turn);
    else {
      const last = grouped.at(-1);
      if (Array.isArray(last)) last.push(turn);
      else grouped.push([turn]);
    }
  }
  return grouped;
}
