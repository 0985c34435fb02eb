import { CallToolResultSchema, CancelTaskResultSchema, CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '../contract/types';
import { classify, McpCallFailed, redactor } from './errors';
import { toCallToolResult } from './results';
import { IdleTimer, MAX_TIMER_MS } from './idle-timer';
import { McpSession, type CallWatcher, type McpClientOptions, type McpServerRef } from './session';

/**
 * MCP tasks (revision 2025-11-25): a tool the server runs as a task is started with `tools/call` carrying `task`, then
 * followed with `tasks/get`, its result read with `tasks/result`, and stopped with `tasks/cancel`. A server keeps a task
 * in the MCP session that made it, so each step names that session: any worker resumes it by its id (no initialize),
 * which is how a run's task outlives the worker that started it (docs/mcp.md).
 */

/** Where a task lives: its server, the session that made it, and its id. */
export interface McpTaskRef {
  sessionId: string;
  taskId: string;
}

/** A task as `tasks/get` reports it: the spec's statuses, its message, and how often the server asks to be polled. */
export interface McpTaskState {
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  statusMessage?: string;
  pollIntervalMs?: number;
}

/** The steps of a task on the server `server`; every failure is an McpCallFailed (header values never in its message). */
export function createMcpTasks(options: McpClientOptions) {
  /** Opens (or resumes) a session, does `work` in it, and lets it go: the session stays on the server for the task. */
  async function inSession<T>(server: McpServerRef, sessionId: string | undefined, signal: AbortSignal | undefined, work: (s: McpSession) => Promise<T>): Promise<T> {
    const redact = redactor(server.headers);
    let session: McpSession;
    try {
      session = await McpSession.open(server, options, { signal: signal ?? new AbortController().signal, timeoutMs: options.connectTimeoutMs, ...(sessionId ? { sessionId } : {}) });
    } catch (err) {
      const c = classify(err, { inSession: false });
      throw new McpCallFailed(c.reason, false, redact(c.message));
    }
    try {
      return await work(session);
    } catch (err) {
      if (err instanceof McpCallFailed) throw err;
      const c = classify(err, { inSession: true });
      throw new McpCallFailed(c.reason, c.reachedServer, redact(c.message));
    } finally {
      // Not terminated (DELETE): the server keeps the task in this session.
      await session.client.close().catch(() => undefined);
    }
  }
  const requestOptions = (signal?: AbortSignal) => ({ timeout: options.callTimeoutMs, ...(signal ? { signal } : {}) });

  return {
    /** Starts `tool` as a task in a new session: its ref and first state. */
    async start(server: McpServerRef, call: { name: string; arguments: Record<string, unknown> }, signal?: AbortSignal): Promise<McpTaskRef & McpTaskState> {
      return inSession(server, undefined, signal, async (session) => {
        const created = await session.client.request({ method: 'tools/call', params: { name: call.name, arguments: call.arguments, task: {} } }, CreateTaskResultSchema, requestOptions(signal));
        const sessionId = session.sessionId;
        if (!sessionId) throw new McpCallFailed('not_mcp', true, 'the server started a task without a session to keep it in');
        return { sessionId, taskId: created.task.taskId, ...state(created.task) };
      });
    },
    /** The task's state (`tasks/get`). */
    async get(server: McpServerRef, task: McpTaskRef, signal?: AbortSignal): Promise<McpTaskState> {
      return inSession(server, task.sessionId, signal, async (session) => state(await session.client.request({ method: 'tasks/get', params: { taskId: task.taskId } }, GetTaskResultSchema, requestOptions(signal))));
    },
    /** The task's result (`tasks/result`, which the server answers once the task has ended), as the run keeps tool results. */
    async result(server: McpServerRef, task: McpTaskRef, signal?: AbortSignal): Promise<CallToolResult> {
      return inSession(server, task.sessionId, signal, async (session) => {
        const result = await session.client.request({ method: 'tasks/result', params: { taskId: task.taskId } }, CallToolResultSchema, requestOptions(signal));
        return toCallToolResult(result, { maxChars: options.maxResponseBytes });
      });
    },
    /**
     * Answers the questions of a task that waits for input (`input_required`): they come on the stream of
     * `tasks/result`, and `onElicit` answers each (MCP_CALL_TIMEOUT_MS does not run meanwhile). The task's result when
     * it ends within MCP_CALL_TIMEOUT_MS of the last word; `working` when it goes on after its questions were answered
     * (the caller follows it again). Throws McpCallFailed `timeout` when no question came.
     */
    async answer(server: McpServerRef, task: McpTaskRef, onElicit: NonNullable<CallWatcher['onElicit']>, signal?: AbortSignal): Promise<CallToolResult | 'working'> {
      return inSession(server, task.sessionId, signal, async (session) => {
        // A fresh object: the session knows the request by it (see McpSession.watch).
        const params = { taskId: task.taskId };
        const request = new AbortController();
        const ended = new AbortController();
        let answered = 0;
        const idle = new IdleTimer(options.callTimeoutMs, () => request.abort(answered > 0 ? WORKING : new McpCallFailed('timeout', true, `the task waits for input but asked nothing within ${options.callTimeoutMs} ms (MCP_CALL_TIMEOUT_MS)`)));
        const stopFollowing = follow(signal, () => request.abort(signal?.reason));
        const stopWatching = session.watch(params, {
          onLost: (failure) => request.abort(failure),
          onElicit: async (question, questionSignal) => {
            const resume = idle.pause();
            const asking = new AbortController();
            const stopAsking = [follow(questionSignal, () => asking.abort()), follow(ended.signal, () => asking.abort())];
            try {
              const answer = await onElicit(question, asking.signal);
              answered++;
              return answer;
            } finally {
              stopAsking.forEach((stop) => stop());
              resume();
            }
          },
        });
        try {
          const result = await session.client.request({ method: 'tasks/result', params }, CallToolResultSchema, { timeout: MAX_TIMER_MS, signal: request.signal });
          return toCallToolResult(result, { maxChars: options.maxResponseBytes });
        } catch (err) {
          if (request.signal.reason === WORKING) return 'working';
          // What ended it early (the idle timer, a lost stream, the caller), not the SDK's wrapped copy of it.
          throw request.signal.aborted ? (request.signal.reason ?? err) : err;
        } finally {
          ended.abort();
          idle.stop();
          stopWatching();
          stopFollowing();
        }
      });
    },
    /** Asks the server to stop the task (`tasks/cancel`); a task that already ended answers an error, which is ignored. */
    async cancel(server: McpServerRef, task: McpTaskRef): Promise<void> {
      await inSession(server, task.sessionId, undefined, (session) => session.client.request({ method: 'tasks/cancel', params: { taskId: task.taskId } }, CancelTaskResultSchema, requestOptions())).catch(() => undefined);
    },
  };
}

export type McpTasks = ReturnType<typeof createMcpTasks>;

/** Why a `tasks/result` was ended after its questions were answered: the task goes on. */
const WORKING = Symbol('working');

/** Calls `stop` when `signal` aborts (at once if it has); the returned function detaches it. */
function follow(signal: AbortSignal | undefined, stop: () => void): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    stop();
    return () => undefined;
  }
  signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
}

function state(task: { status: string; statusMessage?: string; pollInterval?: number }): McpTaskState {
  return {
    status: task.status as McpTaskState['status'],
    ...(task.statusMessage ? { statusMessage: task.statusMessage } : {}),
    ...(task.pollInterval !== undefined ? { pollIntervalMs: task.pollInterval } : {}),
  };
}
