import { ErrorCode, RELATED_TASK_META_KEY, SUPPORTED_PROTOCOL_VERSIONS, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { RunView } from '../http/presenters/run';

/** The revisions this server speaks; the first is answered to a client asking for one it does not know. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'] as const;
/**
 * `MCP-Protocol-Version` values a request may carry: the SDK's (older revisions ask nothing of tools that these do
 * not answer); `initialize` still negotiates one of PROTOCOL_VERSIONS.
 */
export const HEADER_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** Tasks (`tools/call` with `task`, `tasks/*`) came with this revision. */
export const TASKS_SINCE = '2025-11-25';

/** `_meta` key naming the run a tool call starts: a retried call with the same name runs once. */
export const RUN_META = 'io.github.prompt-task-runner/run';
export { RELATED_TASK_META_KEY };

/** JSON-RPC error codes this server answers (the SDK's, plus the implementation-defined ones below). */
export const RPC = {
  parse: ErrorCode.ParseError,
  invalidRequest: ErrorCode.InvalidRequest,
  methodNotFound: ErrorCode.MethodNotFound,
  invalidParams: ErrorCode.InvalidParams,
  internal: ErrorCode.InternalError,
  /** Past a rate limit: `data.retry_after` in seconds. */
  rateLimited: -32029,
  /** MongoDB or Temporal did not answer in time: `data.retry_after` in seconds. */
  unavailable: -32003,
  /** No valid credentials, or not allowed (HTTP 401/403 carry it). */
  unauthorized: -32001,
} as const;

/** A JSON-RPC error this server answers on purpose (anything else is an internal error, its details logged). */
export class McpFault extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const invalidParams = (message: string, data?: Record<string, unknown>) => new McpFault(RPC.invalidParams, message, data);

/** The status an MCP task shows for a run: the one mapping from runs to task states (docs/mcp.md). */
export type McpTaskStatus = Task['status'];

/** The error a task id gets when it names no task of the caller's (never made, another user's, or its run deleted). */
export const unknownTask = () => invalidParams('unknown task id (it may have expired)');

/** What a run waits on a person for: a decision on a tool call, or an input a tool asked for (docs/mcp.md). */
export type OpenAsk =
  | { kind: 'approval'; id: string; tool: string; arguments: unknown }
  /** `url`: the person answers at that page (URL mode); else `schema`, the JSON Schema of the answer's `content`. */
  | { kind: 'input'; id: string; tool: string; message: string; url?: string; schema?: Record<string, unknown> };

/** How a person answers an ask: what the server can tell a client that will not be asked by elicitation. */
export type HowToAnswer = (ask: OpenAsk) => string;

/** An approval the run waits on (its last entry), if it waits on one. */
export function openApproval(run: Pick<RunView, 'status' | 'results'>) {
  const last = run.results.at(-1);
  return run.status === 'pending' && last && 'approval' in last ? last.approval : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What the run waits on a person for (its last entry, while it is `pending`): an approval (`{approval}`), or an input
 * a tool asked for (`{"input": {"id", "tool", "message", "schema" | "url"}}`, issue 30's elicitation on the run side).
 */
export function openAsk(run: Pick<RunView, 'status' | 'results'>): OpenAsk | undefined {
  const approval = openApproval(run);
  if (approval) return { kind: 'approval', id: approval.id, tool: approval.tool, arguments: approval.arguments };
  const last: unknown = run.results.at(-1);
  if (run.status !== 'pending' || !isObject(last) || !isObject(last.input)) return undefined;
  const { id, tool, message, url, schema } = last.input;
  if (typeof id !== 'string' || typeof tool !== 'string') return undefined;
  return {
    kind: 'input',
    id,
    tool,
    message: typeof message === 'string' ? message : '',
    ...(typeof url === 'string' ? { url } : {}),
    ...(isObject(schema) ? { schema } : {}),
  };
}

/** What a run waiting on `ask` shows as its task's `statusMessage`: what is asked, and with `howTo`, how to answer. */
export function askMessage(ask: OpenAsk, howTo?: HowToAnswer): string {
  const what =
    ask.kind === 'approval'
      ? `waiting for a decision on a call of the tool "${ask.tool}"`
      : `waiting for the user's input for the tool "${ask.tool}"${ask.message ? `: ${ask.message}` : ''}`;
  return howTo ? `${what}${/[.?!]$/.test(what) ? '' : '.'} ${howTo(ask)}` : what;
}

/**
 * A run's status as an MCP task's: `pending` (a retry wait too) or `running` → `working`; an open approval or input →
 * `input_required`, its message saying what is asked (and with `howTo`, how to answer it); `ready` → `completed`;
 * `error` → `failed`, or `cancelled` when a person cancelled it.
 */
export function taskStatusOf(run: Pick<RunView, 'status' | 'results'>, howTo?: HowToAnswer): { status: McpTaskStatus; message?: string } {
  const last = run.results.at(-1);
  switch (run.status) {
    case 'ready':
      return { status: 'completed' };
    case 'error': {
      const reason = last && 'error' in last && last.error ? last.error : 'the run ended in error';
      return { status: /^cancelled by /.test(reason) || reason === 'the run was cancelled' ? 'cancelled' : 'failed', message: reason };
    }
    default: {
      const ask = openAsk(run);
      if (ask) return { status: 'input_required', message: askMessage(ask, howTo) };
      return { status: 'working' };
    }
  }
}

/**
 * Whether a client that declared `capabilities` at `initialize` takes `elicitation/create` in form mode: an
 * `elicitation` capability with `form`, or with neither mode named (revisions before 2025-11-25 had form only).
 */
export function elicitsForm(capabilities: { elicitation?: { form?: unknown; url?: unknown } } | undefined): boolean {
  const e = capabilities?.elicitation;
  return !!e && (e.form !== undefined || e.url === undefined);
}

/** Whether a client that declared `capabilities` at `initialize` takes `elicitation/create` in URL mode (2025-11-25). */
export function elicitsUrl(capabilities: { elicitation?: { form?: unknown; url?: unknown } } | undefined): boolean {
  return capabilities?.elicitation?.url !== undefined;
}

export const isTerminalTask = (status: McpTaskStatus) => status === 'completed' || status === 'failed' || status === 'cancelled';
