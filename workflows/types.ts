/** Types shared by the workflow, its activities and the API. Types only: nothing here runs. */

export type Runner = 'openai' | 'anthropic';
export type RunStatus = 'pending' | 'running' | 'ready' | 'error';
export const TERMINAL: readonly RunStatus[] = ['ready', 'error'];

export interface RunIdentity {
  owner: string;
  profile: string;
  task: string;
  run: string;
}

/** Retry of provider calls: the workflow waits (status `pending`) between attempts. */
export interface RetrySettings {
  initialMs: number;
  maxMs: number;
  maxAttempts: number;
}

/** Workflow input: references and trigger data, never a secret. */
export interface RunInput {
  identity: RunIdentity;
  taskId: string;
  taskVersion: number;
  /** Trigger data: Variant A parameters (string map) or Variant B payload (any JSON object). */
  payload: Record<string, unknown>;
  createdAt: number;
  limits: { timeoutMs: number; maxTurns: number; retry: RetrySettings; providerHeartbeatMs: number; providerCallMs: number };
}

export interface LogEntry {
  msg: string;
  time: number;
  level: number;
}
export interface ExchangeEntry {
  msg: string;
  exchange: { role: string; content: string };
}
export interface LastEntry {
  msg: string;
  lastMessage: { role: string; content: string };
  error?: string;
}
export type ResultEntry = LogEntry | ExchangeEntry | LastEntry;

/** What the `run` query returns: the live run, rendered by the API's run presenter. */
export interface RunState {
  status: RunStatus;
  results: ResultEntry[];
  modifiedAt: number;
}

/** Pino's numbers, which the contract's `level` field carries. */
export const LEVEL = { info: 30, warn: 40, error: 50 } as const;

export interface ToolSpec {
  /** Name the model sees: unique within the run, provider-safe (`[A-Za-z0-9_-]{1,64}`). */
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  install: string;
  tool: string;
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type ContentItem = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

export interface CallToolResult {
  content: ContentItem[];
  isError?: boolean;
}

/** Provider-neutral conversation; the provider activity maps it to each wire format. */
export type Turn =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; results: Array<{ call: ToolCall; result: CallToolResult }> };

export interface PreparedRun {
  runner: Runner;
  model: string;
  maxTokens: number | null;
  prompt: string;
  tools: ToolSpec[];
}

/** What the prepare step returns: the run's inputs, and the entries it recorded with status `running` at `at`. */
export interface StartedRun {
  prepared: PreparedRun;
  entries: ResultEntry[];
  at: number;
}

export interface ModelAnswer {
  text: string;
  toolCalls: ToolCall[];
}

/** Details of a provider failure the workflow may retry (ApplicationFailure details[0]). */
export interface ProviderFailureDetails {
  status?: number;
  retryAfterMs?: number;
}
