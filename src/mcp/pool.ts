import crypto from 'node:crypto';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { LRUCache } from 'lru-cache';
import type { CallToolResult } from '../contract/types';
import { classify, McpCallFailed, McpTransportFailure, redactor, type McpFailureReason } from './errors';
import { oauthOf, oauthSecrets } from './oauth';
import { IdleTimer, MAX_TIMER_MS } from './idle-timer';
import { displayUrl } from './policy';
import { toCallToolResult } from './results';
import { McpSession, type CallWatcher, type McpClientOptions, type McpServerRef } from './session';

/** An install's server as a worker calls it: `key` names the install (one session per key per worker). */
export interface McpCallTarget extends McpServerRef {
  key: string;
}

export interface McpToolCall {
  name: string;
  arguments?: Record<string, unknown>;
}

export interface McpCallOptions {
  /** Aborting it ends the call; the server is sent `notifications/cancelled`. */
  signal?: AbortSignal;
  /**
   * How long the call may go without a word from the server (each progress notification restarts it; it does not run
   * while `onElicit` waits for a person or `onSample` for a model); MCP_CALL_TIMEOUT_MS by default.
   */
  timeoutMs?: number;
  onProgress?(progress: number, total: number | undefined, message: string | undefined): void;
  /** The server's log messages (`notifications/message`) sent on this call's answer stream, text bounded. */
  onLog?(level: string, text: string): void;
  /** Answers the server's `elicitation/create` made during this call; without it the request is declined. */
  onElicit?: CallWatcher['onElicit'];
  /** Answers the server's `sampling/createMessage` made during this call; without it the request is refused. */
  onSample?: CallWatcher['onSample'];
}

export interface McpSessionPool {
  /** Calls a tool on the target's pooled session. Throws McpCallFailed (messages free of header values). */
  callTool(target: McpCallTarget, call: McpToolCall, options?: McpCallOptions): Promise<CallToolResult>;
  /** Sessions open or opening. */
  readonly size: number;
  /** Closes every session (calls in flight end); later calls throw. */
  close(): Promise<void>;
}

/** Installs whose sessions a worker keeps (the least recently used is closed once its calls end). */
export const DEFAULT_MAX_SESSIONS = 256;
/** Longest log text handed to `onLog`. */
export const LOG_TEXT_MAX_CHARS = 4_096;
/** How long ending a session waits for the server's answer to DELETE. */
const CLOSE_GRACE_MS = 1_000;
/** After these a session is not trusted again: the next call opens a new one. */
const SESSION_FAILURES = new Set<McpFailureReason>(['session_expired', 'lost', 'not_mcp', 'refused', 'dns', 'tls', 'guard', 'unauthorized', 'forbidden', 'bad_headers', 'oauth']);

interface Entry {
  fingerprint: string;
  opening: Promise<McpSession>;
  /** Ends the opening early (the pool closes). */
  stopOpening: AbortController;
  inFlight: number;
  retired: boolean;
}

/**
 * MCP sessions for a worker's tool calls, reused per install: one session per `key`, opened on first use within
 * MCP_CONNECT_TIMEOUT_MS and kept while the URL and headers stay the same (a changed install gets a new session). A
 * session the server forgot (404) is dropped and the call made once more on a new one (the server ran nothing);
 * after any other session failure the next call opens a new one.
 */
export function createMcpSessionPool(options: McpClientOptions & { maxSessions?: number }): McpSessionPool {
  let closed = false;
  const sessions = new LRUCache<string, Entry>({
    max: options.maxSessions ?? DEFAULT_MAX_SESSIONS,
    dispose: (entry) => retire(entry),
  });

  function retire(entry: Entry): void {
    entry.retired = true;
    if (entry.inFlight === 0) void end(entry);
  }

  /** Ends the session on the server too (DELETE), so that it frees what it holds for it. */
  function end(entry: Entry): Promise<void> {
    return entry.opening.then((s) => s.close(CLOSE_GRACE_MS), () => undefined);
  }

  function acquire(target: McpCallTarget): Entry {
    const fingerprint = fingerprintOf(target);
    let entry = sessions.get(target.key);
    if (entry && entry.fingerprint !== fingerprint) {
      sessions.delete(target.key);
      entry = undefined;
    }
    if (!entry) {
      const stopOpening = new AbortController();
      entry = { fingerprint, opening: open(target, stopOpening), inFlight: 0, retired: false, stopOpening };
      entry.opening.catch(() => undefined);
      sessions.set(target.key, entry);
    }
    entry.inFlight++;
    return entry;
  }

  function release(entry: Entry): void {
    entry.inFlight--;
    if (entry.retired && entry.inFlight === 0) void end(entry);
  }

  function evict(key: string, entry: Entry): void {
    if (sessions.peek(key) === entry) sessions.delete(key);
  }

  async function open(target: McpCallTarget, deadline: AbortController): Promise<McpSession> {
    const timer = setTimeout(
      () => deadline.abort(new McpTransportFailure('timeout', false, `no session within ${options.connectTimeoutMs} ms (MCP_CONNECT_TIMEOUT_MS)`)),
      options.connectTimeoutMs,
    );
    let opened = false;
    try {
      // onLost: the answer stream of `initialize` broke; later calls are watched one by one.
      const session = await McpSession.open(target, options, { signal: deadline.signal, timeoutMs: options.connectTimeoutMs, onLost: (f) => opened || deadline.abort(f) });
      opened = true;
      return session;
    } catch (err) {
      const { reason, message } = classify(deadline.signal.aborted ? deadline.signal.reason : err, { inSession: false });
      // Nothing of the call was sent: whatever went wrong opening the session, the tool did not run.
      throw new McpCallFailed(reason, false, `no session with the MCP server at ${displayUrl(target.url)}: ${message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async function attempt(target: McpCallTarget, call: McpToolCall, callOptions: McpCallOptions, retryExpired: boolean): Promise<CallToolResult> {
    if (closed) throw new Error('the MCP session pool is closed');
    if (callOptions.signal?.aborted) throw notSent();
    const entry = acquire(target);
    try {
      let session: McpSession;
      try {
        session = await untilAborted(entry.opening, callOptions.signal);
      } catch (err) {
        if (err instanceof McpCallFailed && err.reason !== 'cancelled') evict(target.key, entry);
        throw err;
      }
      return await send(session, call, callOptions);
    } catch (err) {
      if (!(err instanceof McpCallFailed)) throw err;
      if (SESSION_FAILURES.has(err.reason)) evict(target.key, entry);
      if (err.reason === 'session_expired' && retryExpired) return attempt(target, call, callOptions, false);
      throw err;
    } finally {
      release(entry);
    }
  }

  async function send(session: McpSession, call: McpToolCall, callOptions: McpCallOptions): Promise<CallToolResult> {
    const controller = new AbortController();
    // Set by whatever ends the call early; the SDK rejects with a wrapped copy, this keeps the original.
    let failure: McpTransportFailure | McpCallFailed | undefined;
    const end = (f: McpTransportFailure | McpCallFailed) => {
      failure ??= f;
      controller.abort(f);
    };
    if (callOptions.signal?.aborted) throw notSent();
    const onAbort = () => end(new McpCallFailed('cancelled', true, 'the call was cancelled while it ran'));
    callOptions.signal?.addEventListener('abort', onAbort, { once: true });
    // A fresh object: the session knows the request by it (see McpSession.watch).
    const args = { ...(call.arguments ?? {}) };
    const timeoutMs = callOptions.timeoutMs ?? options.callTimeoutMs;
    // Ours rather than the SDK's time-out: it must pause while a person answers the server's question.
    const idle = new IdleTimer(timeoutMs, () => end(new McpCallFailed('timeout', true, `no answer within ${timeoutMs} ms (MCP_CALL_TIMEOUT_MS)`)));
    // Ends a question's wait when the call ends, whatever ended it (the server may not withdraw its request).
    const callEnded = new AbortController();
    /** A handler of the server's requests, during which the server waits for us: its silence is not counted. */
    const whileServerWaits = <P, R>(handler: ((params: P, signal: AbortSignal) => Promise<R>) | undefined) =>
      handler &&
      (async (params: P, signal: AbortSignal): Promise<R> => {
        const resume = idle.pause();
        const asking = following([signal, callEnded.signal]);
        try {
          return await handler(params, asking.signal);
        } finally {
          asking.release();
          resume();
        }
      });
    const onElicit = whileServerWaits(callOptions.onElicit);
    const onSample = whileServerWaits(callOptions.onSample);
    const stopWatching = session.watch(args, {
      onLog: (params) => deliverLog(params, callOptions.onLog),
      onLost: end,
      ...(onElicit ? { onElicit } : {}),
      ...(onSample ? { onSample } : {}),
    });
    try {
      const result = await session.client.request({ method: 'tools/call', params: { name: call.name, arguments: args } }, CallToolResultSchema, {
        signal: controller.signal,
        timeout: MAX_TIMER_MS,
        onprogress: (p) => {
          idle.restart();
          callOptions.onProgress?.(p.progress, p.total, p.message);
        },
      });
      return toCallToolResult(result, { maxChars: options.maxResponseBytes });
    } catch (err) {
      if (failure instanceof McpCallFailed) throw failure;
      const c = classify(failure ?? err, { inSession: true });
      throw new McpCallFailed(c.reason, c.reachedServer, c.message);
    } finally {
      callEnded.abort();
      idle.stop();
      stopWatching();
      callOptions.signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    async callTool(target, call, callOptions = {}) {
      try {
        return await attempt(target, call, callOptions, true);
      } catch (err) {
        if (!(err instanceof McpCallFailed)) throw err;
        const redact = redactor({ ...target.headers, ...oauthSecrets(target.url, oauthOf(target)) });
        throw new McpCallFailed(err.reason, err.reachedServer, redact(`the call of ${call.name} failed: ${err.message}`));
      }
    },
    get size() {
      return sessions.size;
    },
    async close() {
      closed = true;
      const entries = [...sessions.values()];
      for (const entry of entries) entry.stopOpening.abort(new McpTransportFailure('cancelled', false, 'the worker closes its MCP sessions'));
      sessions.clear();
      await Promise.all(entries.map(end));
    },
  };
}

const notSent = () => new McpCallFailed('cancelled', false, 'the call was cancelled before it was sent');

/** The session, unless the caller gives up waiting for it first (the session goes on opening for later calls). */
function untilAborted(opening: Promise<McpSession>, signal: AbortSignal | undefined): Promise<McpSession> {
  if (!signal) return opening;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(notSent());
    signal.addEventListener('abort', onAbort, { once: true });
    opening.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * A signal that aborts with any of `sources`; `release` detaches it. A plain controller, not AbortSignal.any (see
 * activities/linked-abort.ts): collected with the call.
 */
function following(sources: AbortSignal[]): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  for (const source of sources) source.addEventListener('abort', stop, { once: true });
  if (sources.some((s) => s.aborted)) stop();
  return { signal: controller.signal, release: () => sources.forEach((s) => s.removeEventListener('abort', stop)) };
}

/** The same install, URL, headers and OAuth client: the same session. Header values and client secrets enter only this hash. */
function fingerprintOf(target: McpCallTarget): string {
  const headers = Object.entries(target.headers ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const oauth = oauthOf(target);
  const client = oauth ? [oauth.tokenUrl ?? null, oauth.clientId, oauth.clientSecret ?? null, oauth.scope ?? null, oauth.privateKey ?? null] : null;
  return crypto.createHash('sha256').update(JSON.stringify([target.url, headers, client])).digest('base64url');
}

function deliverLog(params: unknown, onLog: McpCallOptions['onLog']): void {
  if (!onLog || !params || typeof params !== 'object') return;
  const { level, logger, data } = params as { level?: unknown; logger?: unknown; data?: unknown };
  let text = typeof data === 'string' ? data : JSON.stringify(data) ?? '';
  if (typeof logger === 'string' && logger) text = `${logger}: ${text}`;
  if (text.length > LOG_TEXT_MAX_CHARS) text = `${text.slice(0, LOG_TEXT_MAX_CHARS)} […]`;
  onLog(typeof level === 'string' ? level : 'info', text);
}
