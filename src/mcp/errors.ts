import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * Why an MCP server could not be used, or a call failed. Stable codes: the API and the run's failure mapping key on them.
 * - `guard`: the network guard (or the https rule) refused the URL or the addresses its name resolves to
 * - `refused`, `dns`, `tls`: no connection was made
 * - `unauthorized`, `forbidden`: the server answered 401 / 403 (check the install's headers)
 * - `http_status`: any other HTTP error status
 * - `timeout`: no answer in time
 * - `not_mcp`: an answer that is not MCP (not JSON-RPC, wrong content type, unsupported protocol version)
 * - `too_large`: an answer over MCP_MAX_RESPONSE_BYTES
 * - `lost`: the connection broke after the request was sent
 * - `session_expired`: the server no longer knows the session (404 to a request carrying its id)
 * - `server_error`: the server answered the request with a JSON-RPC error
 * - `cancelled`: the caller aborted
 * - `bad_headers`: a header name or value HTTP cannot carry (never sent)
 */
export type McpFailureReason =
  | 'guard'
  | 'refused'
  | 'dns'
  | 'tls'
  | 'unauthorized'
  | 'forbidden'
  | 'http_status'
  | 'timeout'
  | 'not_mcp'
  | 'too_large'
  | 'lost'
  | 'session_expired'
  | 'server_error'
  | 'cancelled'
  | 'bad_headers';

/** What the transport's fetch and the session layer throw; callers see it as McpUnreachable or McpCallFailed. */
export class McpTransportFailure extends Error {
  constructor(
    readonly reason: McpFailureReason,
    /** Whether the request may have reached the server (false only when it certainly did not). */
    readonly reachedServer: boolean,
    message: string,
  ) {
    super(message);
    this.name = 'McpTransportFailure';
  }
}

/** An MCP server that cannot be used (at install, refresh, or opening a session). `reason: 'guard'` → a 400 naming `mcp.url`. */
export class McpUnreachable extends Error {
  constructor(
    readonly reason: McpFailureReason,
    message: string,
  ) {
    super(message);
    this.name = 'McpUnreachable';
  }
}

/**
 * A tool call that failed. `reachedServer: false` when the tool certainly did not run: the request never reached the
 * server (the guard, refused, DNS, TLS, a session that could not be opened, a caller that cancelled before sending) or
 * the server refused it before running anything (401, 403, 404, 429): a retry cannot run the tool twice. `true`
 * otherwise (a timeout, a connection lost mid-call, a garbage or too large answer, cancelled while running): the tool
 * may have run.
 */
export class McpCallFailed extends Error {
  constructor(
    readonly reason: McpFailureReason,
    readonly reachedServer: boolean,
    message: string,
  ) {
    super(message);
    this.name = 'McpCallFailed';
  }
}

/** The reason, whether the request may have reached the server, and a message (not yet redacted) for any thrown value. */
export function classify(err: unknown, context: { inSession: boolean }): { reason: McpFailureReason; reachedServer: boolean; message: string } {
  const own = findInCauses(err, (e): e is McpTransportFailure => e instanceof McpTransportFailure);
  if (own) return { reason: own.reason, reachedServer: own.reachedServer, message: own.message };
  if (err instanceof StreamableHTTPError) return fromStatus(err.code ?? -1, context.inSession, err.message);
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return { reason: 'timeout', reachedServer: true, message: 'no answer in time' };
    if (err.code === ErrorCode.ConnectionClosed) return { reason: 'lost', reachedServer: true, message: 'the connection closed' };
    return { reason: 'server_error', reachedServer: true, message: `the server answered with an error: ${err.message.replace(/^MCP error -?\d+: /, '')}` };
  }
  const e = err as { name?: string; message?: string } | undefined;
  if (e?.name === 'ZodError' || e?.name === '$ZodError' || err instanceof SyntaxError) {
    return { reason: 'not_mcp', reachedServer: true, message: 'the answer is not MCP (not a JSON-RPC message)' };
  }
  if (e?.message?.startsWith("Server's protocol version is not supported")) {
    return { reason: 'not_mcp', reachedServer: true, message: e.message };
  }
  return { reason: 'lost', reachedServer: true, message: `the request failed: ${e?.message ?? String(err)}` };
}

function fromStatus(status: number, inSession: boolean, text: string): { reason: McpFailureReason; reachedServer: boolean; message: string } {
  if (status === 401) return { reason: 'unauthorized', reachedServer: false, message: 'the server answered 401 Unauthorized: check the headers (a token?)' };
  if (status === 403) return { reason: 'forbidden', reachedServer: false, message: 'the server answered 403 Forbidden: the headers do not grant access' };
  // The spec's answer to an unknown session is 404; servers built on express (server-everything) answer 400 naming it.
  if (status === 400 && inSession && /session/i.test(text)) return { reason: 'session_expired', reachedServer: false, message: 'the server answered 400: it no longer knows the session' };
  if (status === 404 && inSession) return { reason: 'session_expired', reachedServer: false, message: 'the server answered 404: it no longer knows the session' };
  if (status === 404) return { reason: 'http_status', reachedServer: false, message: 'the server answered 404 Not Found: no MCP server at this URL' };
  if (status === -1) return { reason: 'not_mcp', reachedServer: true, message: 'the answer is not MCP (neither JSON nor an event stream)' };
  // 429: refused before anything ran; any other status may come from a proxy after the server began
  return { reason: 'http_status', reachedServer: status !== 429, message: `the server answered HTTP ${status}` };
}

function findInCauses<T>(err: unknown, test: (e: unknown) => e is T): T | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (test(e)) return e;
  }
  return undefined;
}

const REDACTED = '[redacted]';
const AUTH_SCHEMES = /^(bearer|basic|digest|token)$/i;

/**
 * A function that removes every header value (and each word of one, such as a bearer token) from a text: a server may
 * echo what it was sent into an error body, and no header value may reach a message or a log.
 */
export function redactor(headers: Record<string, string> | undefined): (text: string) => string {
  const secrets = new Set<string>();
  for (const value of Object.values(headers ?? {})) {
    const v = value.trim();
    // A value of a few characters (`X-Version: 2`) is no secret, and removing it would garble the message.
    if (v.length >= 4) secrets.add(v);
    for (const word of v.split(/[\s,;=:]+/)) if (word.length >= 6 && !AUTH_SCHEMES.test(word)) secrets.add(word);
  }
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((t, s) => t.split(s).join(REDACTED), text);
}
