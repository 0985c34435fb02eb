import { setMaxListeners } from 'node:events';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Dispatcher } from 'undici';
import { guardedRequest, headerValue, responseHeaders } from '../net/guarded-request';
import type { NetworkPolicy } from '../net/network-policy';
import { McpTransportFailure } from './errors';
import { displayUrl, checkMcpUrl } from './policy';
import { eventData, SseEventSplitter } from './sse-events';

/** What the session layer hears about the answer streams of its requests (by JSON-RPC request id). */
export interface StreamObserver {
  /** A `notifications/message` (a server log message) that came on the stream of these requests. */
  onLog(requestIds: readonly RequestId[], params: unknown): void;
  /** The stream of these requests broke (lost, too large, not MCP) before it ended: the requests will get no answer. */
  onLost(requestIds: readonly RequestId[], failure: McpTransportFailure): void;
  /**
   * A request of the server's (`elicitation/create`, `sampling/createMessage`...) came on the stream of these requests:
   * it belongs to them. Told before the SDK reads the event, so its handler finds out whose it is.
   */
  onServerRequest?(requestIds: readonly RequestId[], serverRequestId: RequestId): void;
}

type RequestId = string | number;

export interface McpFetchOptions {
  policy: NetworkPolicy;
  /** The pinned agent (src/net/pinned-agent.ts): every resolved address is checked before it is connected to. */
  dispatcher: Dispatcher;
  /** The cap of a JSON answer and of a request's whole event stream; of each event on the session's own (GET) stream. */
  maxResponseBytes: number;
  observer?: StreamObserver;
}

/** Headers the transport owns (undici refuses some outright). */
const TRANSPORT_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'te', 'trailer', 'host'];

/**
 * The `fetch` of the SDK's StreamableHTTPClientTransport: every request through the network guard (the URL checked by
 * checkMcpUrl, connected only to addresses the pinned agent checked; no redirect followed, the SDK follows same-origin
 * ones through this fetch again), every answer body capped. Throws McpTransportFailure when no answer comes; a body cut
 * mid-way errors its stream with one (and tells the observer which requests lost their answer).
 *
 * A request's event stream that ends or breaks before its answer is resumable when one of its events had an `id`: the
 * SDK then asks again with a GET carrying `Last-Event-ID` (after the server's `retry:`), and that stream stands for the
 * request's. Its requests lose their answer only when that GET gets no stream (its one try), or when the stream was not
 * resumable; a stream that ends without an answer and without an event id lost it too (nothing would come).
 */
export function createMcpFetch(options: McpFetchOptions): FetchLike {
  /** The requests of each resumable stream that broke, by the last event id it had: the GET that resumes it names it. */
  const resumable = new Map<string, RequestId[]>();
  return async (input, init = {}) => {
    const url = new URL(String(input));
    const verdict = checkMcpUrl(url, options.policy);
    if (!verdict.allowed) throw new McpTransportFailure('guard', false, `the network guard refuses ${displayUrl(url)}: ${verdict.reason}`);
    const method = (init.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod;
    const headers = Object.fromEntries(new Headers(init.headers));
    for (const name of TRANSPORT_HEADERS) delete headers[name];
    const body = typeof init.body === 'string' ? init.body : undefined;
    const lastEventId = method === 'GET' ? headers['last-event-id'] : undefined;
    const resumed = lastEventId !== undefined ? resumable.get(lastEventId) : undefined;
    if (lastEventId !== undefined) resumable.delete(lastEventId);
    const unresumed = (why: string) => {
      const failure = new McpTransportFailure('lost', true, `the answer stream broke and could not be resumed (${why})`);
      if (resumed) options.observer?.onLost(resumed, failure);
      return failure;
    };
    // The SDK's transport gives one signal to every request of a session, each of which listens on it until it ends:
    // many calls at once on one install are expected, not a leak (Node warns past 10 listeners).
    if (init.signal) setMaxListeners(0, init.signal);
    const answer = await guardedRequest(url, { method, headers, body, signal: init.signal ?? undefined }, { policy: options.policy, dispatcher: options.dispatcher });
    if ('refused' in answer) {
      unresumed('the network guard refuses it');
      throw new McpTransportFailure('guard', false, `the network guard refuses ${displayUrl(url)}: ${answer.refused}`);
    }
    if ('failed' in answer) {
      if (init.signal?.aborted) throw answer.error;
      const failure = connectFailure(answer.error, url);
      unresumed(failure.message);
      throw failure;
    }
    const res = answer.response;
    // A 401 is asked again by the OAuth fetch, with a new token: that GET resumes the stream.
    if (resumed && res.statusCode === 401) resumable.set(lastEventId!, resumed);
    else if (resumed && (res.statusCode < 200 || res.statusCode > 299)) unresumed(`the server answered ${res.statusCode}`);
    const contentType = headerValue(res.headers, 'content-type') ?? '';
    const nullBody = method === 'HEAD' || res.statusCode === 202 || res.statusCode === 204 || res.statusCode === 304;
    if (nullBody) {
      await res.body.dump().catch(() => undefined);
      return new Response(null, { status: res.statusCode, headers: responseHeaders(res.headers) });
    }
    const requestIds = method === 'POST' && body !== undefined ? requestIdsOf(body) : (resumed ?? []);
    const stream = cappedStream(res.body, {
      maxBytes: options.maxResponseBytes,
      sse: /^text\/event-stream/i.test(contentType),
      // The session's own stream lives as long as the session: its events are bounded one by one, not in total.
      perEventOnly: method === 'GET' && !resumed,
      requestIds,
      observer: options.observer,
      signal: init.signal ?? undefined,
      resumableAt: (id) => resumable.set(id, requestIds),
    });
    return new Response(stream, { status: res.statusCode, headers: responseHeaders(res.headers) });
  };
}

interface CapOptions {
  maxBytes: number;
  sse: boolean;
  perEventOnly: boolean;
  requestIds: RequestId[];
  observer?: StreamObserver;
  signal?: AbortSignal;
  /** The stream ended or broke unanswered after an event with this id: the SDK resumes it from there. */
  resumableAt(lastEventId: string): void;
}

function cappedStream(body: Dispatcher.ResponseData['body'], options: CapOptions): ReadableStream<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]();
  const splitter = options.sse ? new SseEventSplitter() : undefined;
  const watch = options.sse && options.observer !== undefined && options.requestIds.length > 0;
  const seen: Seen = { answered: new Set(), lastEventId: undefined };
  const unanswered = () => options.requestIds.some((id) => !seen.answered.has(id));
  /** Whether the SDK will resume this stream (it does once an event had an id, unless the answer came). */
  const resuming = () => {
    if (!watch || seen.lastEventId === undefined || !unanswered()) return false;
    options.resumableAt(seen.lastEventId);
    return true;
  };
  let total = 0;
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, failure: McpTransportFailure) => {
    body.destroy();
    if (options.requestIds.length > 0) options.observer?.onLost(options.requestIds, failure);
    controller.error(failure);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch (err) {
        if (options.signal?.aborted) return controller.error(err);
        const failure = new McpTransportFailure('lost', true, `the connection broke while the server answered: ${(err as Error).message ?? err}`);
        if (resuming()) return controller.error(failure);
        return fail(controller, failure);
      }
      if (next.done) {
        if (watch && unanswered() && !resuming()) options.observer?.onLost(options.requestIds, new McpTransportFailure('lost', true, 'the server ended the answer stream without an answer'));
        return controller.close();
      }
      const chunk = next.value;
      total += chunk.length;
      if (!options.perEventOnly && total > options.maxBytes) return fail(controller, tooLarge(options.maxBytes));
      if (splitter) {
        const events = splitter.push(chunk);
        if (splitter.pendingBytes > options.maxBytes) return fail(controller, tooLarge(options.maxBytes));
        if (watch) {
          for (const event of events) {
            const failure = observe(event, options.requestIds, options.observer!, seen);
            if (failure) return fail(controller, failure);
          }
        }
      }
      controller.enqueue(chunk);
    },
    cancel() {
      body.destroy();
    },
  });
}

/** What a request's stream showed so far: the answers among its requests, and its last event id. */
interface Seen {
  answered: Set<RequestId>;
  lastEventId: string | undefined;
}

/**
 * Hands a call's log messages and the server's requests to the observer, and notes answers and event ids in `seen`; a
 * failure when the event is not JSON-RPC.
 */
function observe(event: Buffer, requestIds: RequestId[], observer: StreamObserver, seen: Seen): McpTransportFailure | undefined {
  const id = eventId(event);
  if (id) seen.lastEventId = id;
  const data = eventData(event);
  if (data === undefined) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return new McpTransportFailure('not_mcp', true, 'the answer is not MCP (an event that is not JSON)');
  }
  for (const m of Array.isArray(message) ? message : [message]) {
    const msg = m as { id?: unknown; method?: unknown; params?: unknown } | null;
    if (!msg || typeof msg !== 'object') continue;
    if (typeof msg.method !== 'string') {
      if ((typeof msg.id === 'string' || typeof msg.id === 'number') && requestIds.includes(msg.id)) seen.answered.add(msg.id);
      continue;
    }
    if (msg.method === 'notifications/message') observer.onLog(requestIds, msg.params);
    else if (typeof msg.id === 'string' || typeof msg.id === 'number') observer.onServerRequest?.(requestIds, msg.id);
  }
  return undefined;
}

/** The `id` field of one event (its last `id:` line; none when empty, as EventSource takes it). */
function eventId(event: Buffer): string | undefined {
  let id: string | undefined;
  for (const line of event.toString('utf8').split(/\r\n|\r|\n/)) {
    if (line === 'id' || line.startsWith('id:')) id = line.slice(3).replace(/^ /, '');
  }
  return id || undefined;
}

const tooLarge = (max: number) => new McpTransportFailure('too_large', true, `the answer is over the ${max}-byte limit (MCP_MAX_RESPONSE_BYTES)`);

/** The ids of the JSON-RPC requests (not notifications, not responses) a POST body carries. */
function requestIdsOf(body: string): RequestId[] {
  try {
    const parsed = JSON.parse(body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed])
      .filter((m): m is { id: RequestId; method: string } => !!m && typeof m === 'object' && 'method' in m && 'id' in m)
      .map((m) => m.id);
  } catch {
    return [];
  }
}

const TLS_CODES = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|EPROTO$)/;

/** No answer: whether the request could have been sent depends on where the connection failed. */
export function connectFailure(err: unknown, url: URL): McpTransportFailure {
  const where = displayUrl(url);
  const code = errorCode(err);
  if (code === 'ECONNREFUSED') return new McpTransportFailure('refused', false, `connection refused by ${url.host} (nothing listens at ${where})`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA') {
    return new McpTransportFailure('dns', false, `the name ${url.hostname} does not resolve (DNS: ${code})`);
  }
  if (code && TLS_CODES.test(code)) return new McpTransportFailure('tls', false, `TLS with ${url.host} failed (${code})`);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return new McpTransportFailure('timeout', false, `no connection to ${url.host} in time`);
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return new McpTransportFailure('refused', false, `${url.host} is unreachable (${code})`);
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new McpTransportFailure('timeout', true, `${url.host} sent no answer in time`);
  return new McpTransportFailure('lost', true, `the request to ${where} failed${code ? ` (${code})` : ''}`);
}

/** The first `code` along the error and its causes (undici wraps socket errors). */
function errorCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET' && code !== 'UND_ERR') return code;
  }
  return undefined;
}
