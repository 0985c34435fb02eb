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

/** An approval the run waits on (its last entry), if it waits on one. */
export function openApproval(run: Pick<RunView, 'status' | 'results'>) {
  const last = run.results.at(-1);
  return run.status === 'pending' && last && 'approval' in last ? last.approval : undefined;
}

/**
 * A run's status as an MCP task's: `pending` (a retry wait too) or `running` → `working`; an open approval →
 * `input_required`; `ready` → `completed`; `error` → `failed`, or `cancelled` when a person cancelled it.
 */
export function taskStatusOf(run: Pick<RunView, 'status' | 'results'>): { status: McpTaskStatus; message?: string } {
  const last = run.results.at(-1);
  switch (run.status) {
    case 'ready':
      return { status: 'completed' };
    case 'error': {
      const reason = last && 'error' in last && last.error ? last.error : 'the run ended in error';
      return { status: /^cancelled by /.test(reason) || reason === 'the run was cancelled' ? 'cancelled' : 'failed', message: reason };
    }
    default: {
      const approval = openApproval(run);
      if (approval) return { status: 'input_required', message: `waiting for a decision on a call of the tool "${approval.tool}"` };
      return { status: 'working' };
    }
  }
}

export const isTerminalTask = (status: McpTaskStatus) => status === 'completed' || status === 'failed' || status === 'cancelled';
