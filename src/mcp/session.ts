import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Dispatcher } from 'undici';
import type { NetworkPolicy } from '../net/network-policy';
import { McpTransportFailure } from './errors';
import { createOAuthFetch, oauthOf, type McpOAuthClient } from './oauth';
import { createMcpFetch } from './transport-fetch';

/**
 * Where an MCP server is, the headers it is sent, and the OAuth client that gets its tokens (header values, the client's
 * secrets and its tokens are secrets: never in a message or a log). The OAuth client may also come attached to the
 * headers (oauth.ts headersWithOAuth).
 */
export interface McpServerRef {
  url: string;
  headers?: Record<string, string>;
  oauth?: McpOAuthClient;
}

/** What every MCP connection of a process shares (mcpClientOptions builds it from the configuration). */
export interface McpClientOptions {
  policy: NetworkPolicy;
  dispatcher: Dispatcher;
  connectTimeoutMs: number;
  callTimeoutMs: number;
  maxResponseBytes: number;
}

/**
 * One call in flight on a session: where its stream's log messages go, how a broken stream ends it, and who answers
 * the server's requests made during it (on its answer stream). A request no watcher answers is declined (elicitation)
 * or refused with an MCP error (sampling).
 */
export interface CallWatcher {
  onLog?(params: unknown): void;
  onLost(failure: McpTransportFailure): void;
  /** The server asks the user something (`elicitation/create`): the user's answer. `signal` ends with the call. */
  onElicit?(params: ElicitRequest['params'], signal: AbortSignal): Promise<ElicitResult>;
  /** The server asks for a model's answer (`sampling/createMessage`). Throws McpError to refuse. */
  onSample?(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>;
}

/** What a session declares it can do: elicitation (form and URL) and sampling, each answered per call (CallWatcher). */
const CLIENT_CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {} };

export interface OpenOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /** The answer stream of a request no call watches (initialize, tools/list) broke: that request will get no answer. */
  onLost?(failure: McpTransportFailure): void;
  /** Resumes this session (one a server keeps a task in, opened elsewhere): no initialize is sent. */
  sessionId?: string;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[^\0-\x08\x0a-\x1f\x7f]*$/;

export const CLIENT_INFO = { name: 'prompt-task-runner', version: '0.1.0' };

/**
 * A connected MCP client on a Streamable HTTP transport whose fetch is guarded and capped. `watch(args, watcher)`
 * before sending `tools/call` with that very `arguments` object: the session then routes the log messages and the
 * loss of that request's answer stream to the watcher (the SDK itself tells neither apart per request).
 */
export class McpSession {
  private constructor(
    readonly client: Client,
    readonly transport: WatchingTransport,
    private readonly watchers: WeakMap<object, CallWatcher>,
    private readonly byRequestId: Map<string | number, CallWatcher>,
    private readonly byServerRequest: Map<string | number, CallWatcher>,
  ) {}

  /** Connects (initialize) within `timeoutMs`, or the signal. Throws what the SDK or the transport threw. */
  static async open(server: McpServerRef, options: McpClientOptions, open: OpenOptions): Promise<McpSession> {
    // Checked here: the Fetch API's own error would quote the bad value.
    const badHeader = Object.entries(server.headers ?? {}).find(([name, value]) => !HEADER_NAME.test(name) || !HEADER_VALUE.test(value));
    if (badHeader) throw new McpTransportFailure('bad_headers', false, `the header ${HEADER_NAME.test(badHeader[0]) ? badHeader[0] : '(a bad name)'} cannot be sent: a name is letters, digits and !#$%&'*+-.^_\`|~, a value has no control characters`);
    const watchers = new WeakMap<object, CallWatcher>();
    const byRequestId = new Map<string | number, CallWatcher>();
    // The server's requests by their id, each to the watcher of the call on whose stream it came (until answered).
    const byServerRequest = new Map<string | number, CallWatcher>();
    const guarded = createMcpFetch({
      policy: options.policy,
      dispatcher: options.dispatcher,
      maxResponseBytes: options.maxResponseBytes,
      observer: {
        onLog: (ids, params) => ids.forEach((id) => byRequestId.get(id)?.onLog?.(params)),
        onLost: (ids, failure) => {
          for (const id of ids) {
            const watcher = byRequestId.get(id);
            if (watcher) watcher.onLost(failure);
            else open.onLost?.(failure);
          }
        },
        onServerRequest: (ids, serverRequestId) => {
          const watcher = ids.map((id) => byRequestId.get(id)).find((w) => w !== undefined);
          if (watcher) byServerRequest.set(serverRequestId, watcher);
        },
      },
    });
    const oauth = oauthOf(server);
    // Every request (initialize, calls, the session's stream, DELETE) with the OAuth token, when the install has a client.
    const fetch = oauth ? createOAuthFetch(guarded, server.url, oauth, options) : guarded;
    const transport = new WatchingTransport(new URL(server.url), { fetch, requestInit: { headers: { ...(server.headers ?? {}) } }, ...(open.sessionId ? { sessionId: open.sessionId } : {}) });
    const client = new Client(CLIENT_INFO, { capabilities: CLIENT_CAPABILITIES });
    // The SDK reports stray events here (a session stream that ended, a late answer); calls hear of their own failures.
    client.onerror = () => undefined;
    const watcherOf = (serverRequestId: string | number) => {
      const watcher = byServerRequest.get(serverRequestId);
      byServerRequest.delete(serverRequestId);
      return watcher;
    };
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      const watcher = watcherOf(extra.requestId);
      return watcher?.onElicit ? watcher.onElicit(request.params, extra.signal) : { action: 'decline' };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const watcher = watcherOf(extra.requestId);
      if (!watcher?.onSample) throw new McpError(ErrorCode.InvalidRequest, 'sampling is not offered to this request (only during a tool call of a run whose install allows it)');
      return watcher.onSample(request.params, extra.signal);
    });
    transport.onRequest = (id, args) => {
      const watcher = args && watchers.get(args);
      if (watcher) byRequestId.set(id, watcher);
    };
    // The SDK keeps listening on a request's signal after its answer, and would send `notifications/cancelled` for the
    // finished initialize when `open.signal` aborts later (the pool closing): a signal that follows it only until then.
    const connecting = new AbortController();
    const follow = () => connecting.abort(open.signal.reason);
    if (open.signal.aborted) follow();
    else open.signal.addEventListener('abort', follow, { once: true });
    try {
      await client.connect(transport, { signal: connecting.signal, timeout: open.timeoutMs });
    } finally {
      open.signal.removeEventListener('abort', follow);
    }
    return new McpSession(client, transport, watchers, byRequestId, byServerRequest);
  }

  get sessionId(): string | undefined {
    return this.transport.sessionId;
  }

  get protocolVersion(): string | undefined {
    return this.transport.protocolVersion;
  }

  /** Routes what concerns the request sent with `args` (the object itself) to `watcher`; the returned function stops it. */
  watch(args: object, watcher: CallWatcher): () => void {
    this.watchers.set(args, watcher);
    return () => {
      this.watchers.delete(args);
      for (const [id, w] of this.byRequestId) if (w === watcher) this.byRequestId.delete(id);
      for (const [id, w] of this.byServerRequest) if (w === watcher) this.byServerRequest.delete(id);
    };
  }

  private closing: Promise<void> | undefined;

  /** Ends the session on the server (DELETE, waited for at most `graceMs`) and closes the client, once. Never throws. */
  close(graceMs = 0): Promise<void> {
    this.closing ??= (async () => {
      if (graceMs > 0 && this.transport.sessionId) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          this.transport.terminateSession().catch(() => undefined),
          new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
        ]);
        clearTimeout(timer);
      }
      await this.client.close().catch(() => undefined);
    })();
    return this.closing;
  }
}

/**
 * The SDK's transport, telling the session which request id carries which watched object as it sends: a `tools/call`'s
 * `arguments`, a `tasks/result`'s `params` (whose stream carries the questions of a task that waits for input).
 */
class WatchingTransport extends StreamableHTTPClientTransport {
  onRequest?: (id: string | number, args: object | undefined) => void;

  override async send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    for (const m of Array.isArray(message) ? message : [message]) {
      if (!('method' in m) || !('id' in m)) continue;
      const watched = m.method === 'tools/call' ? (m.params as { arguments?: unknown } | undefined)?.arguments : m.method === 'tasks/result' ? m.params : undefined;
      if (m.method === 'tools/call' || m.method === 'tasks/result') this.onRequest?.(m.id, watched && typeof watched === 'object' ? watched : undefined);
    }
    return super.send(message, options);
  }
}
