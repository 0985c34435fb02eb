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
  /** A system prompt (an MCP server's sampling request); a run's calls send none. */
  system?: string;
  /** An MCP server's sampling request's; a run's calls leave the provider's default. */
  temperature?: number;
  /**
   * Given: the call streams (unless its endpoint answered a stream with plain JSON before) and is called with the
   * answer's whole text so far each time more of it arrives, never with tool-call arguments. The answer is the same.
   */
  onText?: (textSoFar: string) => void;
}

/** A provider call as its caller gives it: the key, connections, base URL and time limit are the activity's. */
export type ProviderRequest = Omit<ProviderCall, 'key' | 'fetch' | 'baseURL' | 'timeoutMs'>;

/** A provider's answer, before the activity stores its large parts. */
export interface ProviderAnswer {
  text: string;
  toolCalls: ToolCall[];
  /** Tokens as the provider reports them (0 where it reports none). */
  usage: TokenUsage;
  /** Why the model stopped, in the provider's words (`stop`, `length`, `end_turn`, `max_tokens`…), when it says. */
  stopReason?: string;
  /** The model that answered, as the provider names it (a dated version of the one asked for), when it says. */
  model?: string;
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
