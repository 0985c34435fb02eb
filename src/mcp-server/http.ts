import type { Context, Middleware } from 'koa';
import getRawBody from 'raw-body';
import { JSONRPCMessageSchema, isJSONRPCNotification, isJSONRPCRequest, type JSONRPCMessage, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { AppDeps } from '../http/deps';
import type { RunService } from '../http/routes/runs/service';
import { openEventStream } from '../http/routes/runs/events';
import { jsonDepth } from '../http/middleware/body';
import { DEFAULT_PROFILE, findProfile } from '../store/profiles';
import { NAME_PATTERN } from '../store/names';
import { createTtlCache } from '../ttl-cache';
import { mcpEndpointUrl } from '../http/routes/mcp/router';
import { allowsProfile, mcpAuthenticator, type McpPrincipal } from './auth';
import { createIds, ELICITS_NOTHING } from './ids';
import { z } from 'zod';
import { mcpMethods, STREAMING_METHODS, type Caller, type ResumePoint } from './methods';
import { HEADER_VERSIONS, McpFault, PROTOCOL_VERSIONS, RPC } from './protocol';
import { mcpRuns, type Channel } from './runs';
import { createToolWatch } from './tool-watch';

const ENDPOINT = /^\/mcp(?:\/([^/]+))?\/?$/;
const METADATA = /^\/\.well-known\/oauth-protected-resource\/mcp(?:\/([^/]+))?\/?$/;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** How soon a client whose answer stream broke reconnects (the `retry` of its priming event). */
const RESUME_RETRY_MS = 500;

const resumePoint = z.object({
  taskId: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/),
  requestId: z.union([z.string().max(200), z.number()]),
  method: z.enum(['tools/call', 'tasks/result']),
  progressToken: z.union([z.string().max(200), z.number()]).optional(),
});
/** A resume point as an SSE event id (it names a task only its user can read: nothing in it needs hiding). */
const encodeResume = (point: ResumePoint) => `r.${Buffer.from(JSON.stringify(point)).toString('base64url')}`;
function decodeResume(id: string): ResumePoint | undefined {
  if (!id.startsWith('r.') || id.length > 2000) return undefined;
  try {
    const parsed = resumePoint.safeParse(JSON.parse(Buffer.from(id.slice(2), 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The server's version, as `initialize` names it. */
const SERVER_VERSION = '0.1.0';

/**
 * `/mcp/<profile>` (and `/mcp` for `default`): the profile's tasks as MCP tools over Streamable HTTP (docs/mcp.md,
 * "Your tasks as MCP tools"), and its RFC 9728 resource metadata. Mounted before the JSON body parser: it reads its
 * own body and answers every failure as a JSON-RPC error. Nothing of a session is kept in this process: the session
 * id is a MAC (ids.ts), runs and task handles are in the store, and a client's answers name what they answer, so
 * any API process serves any request of a session.
 */
export function mcpServer(deps: AppDeps, runs: RunService): { middleware: Middleware; close(): void } {
  const { config, logger } = deps;
  const { models } = deps.db;
  const publicUrl = new URL(config.PUBLIC_URL);
  const authenticate = mcpAuthenticator(models, config.SESSION_CACHE_MS);
  const ids = createIds(config.SIGNING_SECRET);
  const mcp = mcpRuns(runs, config);
  const methods = mcpMethods({ models, logger, runs, mcp, ids, serverVersion: SERVER_VERSION });
  // Whether the user has the profile: every request asks, and all of a profile's clients share one key, so it is
  // read again ahead of its time; a request never waits for the store while the profile is in use.
  const profiles = createTtlCache<boolean>(config.TRIGGER_CACHE_MS, { refreshAhead: true });
  const toolWatch = createToolWatch(models, logger);
  /** The answer streams open now: ended when the app closes, so their clients resume on another process. */
  const streams = new Set<ReturnType<typeof openEventStream>>();
  const openStream = (ctx: Context) => {
    const out = openEventStream(ctx, config.EVENTS_HEARTBEAT_MS);
    streams.add(out);
    out.onClose(() => streams.delete(out));
    return out;
  };

  /** Sends the answer to `requestId` on `out` once `answer` settles, then ends the stream. */
  const answerOn = (out: ReturnType<typeof openEventStream>, requestId: string | number, answer: () => Promise<unknown>, eventId: () => string | undefined) => {
    void (async () => {
      let reply: JSONRPCMessage;
      try {
        reply = { jsonrpc: '2.0', id: requestId, result: (await answer()) as Record<string, unknown> };
      } catch (err) {
        const fault = methods.faultOf(err);
        reply = { jsonrpc: '2.0', id: requestId, error: { code: fault.code, message: fault.message, ...(fault.data ? { data: fault.data } : {}) } };
      }
      await out.send('message', JSON.stringify(reply), eventId());
      out.end();
    })();
  };

  const metadataUrl = (profile: string) => `${publicUrl.origin}/.well-known/oauth-protected-resource/mcp${profile === DEFAULT_PROFILE ? '' : `/${profile}`}`;

  const hostAllowed = (host: string) => {
    const name = URL.canParse(`http://${host}`) ? new URL(`http://${host}`).hostname : '';
    return host === publicUrl.host || LOOPBACK.has(name);
  };
  /** DNS rebinding: a page of another site must not reach this server through a name that resolves to it. */
  const originAllowed = (ctx: Context) => {
    const origin = ctx.get('origin');
    if (!hostAllowed(ctx.host)) return false;
    if (!origin) return true;
    if (!URL.canParse(origin)) return false;
    const from = new URL(origin);
    return from.origin === publicUrl.origin || (LOOPBACK.has(from.hostname) && LOOPBACK.has(new URL(`http://${ctx.host}`).hostname));
  };

  const sendError = (ctx: Context, status: number, id: JSONRPCRequest['id'] | null, fault: McpFault) => {
    ctx.status = status;
    ctx.type = 'application/json';
    ctx.body = { jsonrpc: '2.0', id, error: { code: fault.code, message: fault.message, ...(fault.data ? { data: fault.data } : {}) } };
  };

  const metadata = (ctx: Context, profile: string) => {
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = {
      resource: mcpEndpointUrl(config.PUBLIC_URL, profile),
      resource_name: `Prompt tasks of the profile "${profile}"`,
      bearer_methods_supported: ['header'],
      resource_documentation: `${config.PUBLIC_URL}/docs`,
    };
  };

  /** Reads the body as one JSON-RPC message; answers (and returns undefined) when it is not one. */
  const readMessage = async (ctx: Context): Promise<JSONRPCMessage | undefined> => {
    let text: string;
    try {
      text = await getRawBody(ctx.req, { limit: config.BODY_LIMIT_BYTES, encoding: 'utf8' });
    } catch (err) {
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      // The rest of the body is not read: the connection cannot serve another request.
      ctx.set('Connection', 'close');
      sendError(ctx, tooLarge ? 413 : 400, null, new McpFault(RPC.invalidRequest, tooLarge ? `the body is over the limit of ${config.BODY_LIMIT_BYTES} bytes` : 'the body could not be read'));
      return undefined;
    }
    if (jsonDepth(text, config.JSON_MAX_DEPTH) > config.JSON_MAX_DEPTH) {
      sendError(ctx, 400, null, new McpFault(RPC.parse, `the body nests deeper than ${config.JSON_MAX_DEPTH} levels`));
      return undefined;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      sendError(ctx, 400, null, new McpFault(RPC.parse, 'parse error: the body is not JSON'));
      return undefined;
    }
    if (Array.isArray(body)) {
      sendError(ctx, 400, null, new McpFault(RPC.invalidRequest, 'JSON-RPC batches are not supported (removed in revision 2025-06-18)'));
      return undefined;
    }
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) {
      const id = body && typeof body === 'object' && 'id' in body && (typeof body.id === 'string' || typeof body.id === 'number') ? body.id : null;
      sendError(ctx, 400, id, new McpFault(RPC.invalidRequest, 'invalid request: not a JSON-RPC 2.0 request, notification or response'));
      return undefined;
    }
    return parsed.data;
  };

  const post = async (ctx: Context, principal: McpPrincipal, profile: string) => {
    if (!ctx.is('json')) {
      ctx.set('Connection', 'close');
      return sendError(ctx, 415, null, new McpFault(RPC.invalidRequest, `content-type: expected application/json, got ${ctx.get('content-type') || 'none'}`));
    }
    const message = await readMessage(ctx);
    if (!message) return;
    const id = 'id' in message ? (message.id ?? null) : null;
    const initializing = isJSONRPCRequest(message) && message.method === 'initialize';
    const version = ctx.get('mcp-protocol-version');
    if (version && !initializing && !HEADER_VERSIONS.includes(version)) {
      return sendError(ctx, 400, id, new McpFault(RPC.invalidRequest, `MCP-Protocol-Version: "${version.slice(0, 40)}" is not supported (${HEADER_VERSIONS.join(', ')})`));
    }
    const session = ctx.get('mcp-session-id');
    const client = session && !initializing ? ids.sessionOf(session, principal.username) : undefined;
    if (session && !initializing && !client) {
      return sendError(ctx, 404, id, new McpFault(RPC.invalidRequest, 'unknown session: initialize a new one'));
    }
    const caller: Caller = { principal, profile, protocolVersion: version || PROTOCOL_VERSIONS[1], ...(client ?? ELICITS_NOTHING) };

    if (!isJSONRPCRequest(message)) {
      // A notification (initialized, cancelled, progress: nothing to do here) or the client's answer to our request.
      if (!isJSONRPCNotification(message)) {
        try {
          await methods.answer(caller, message as Parameters<typeof methods.answer>[1]);
        } catch (err) {
          const fault = methods.faultOf(err);
          return sendError(ctx, fault.code === RPC.internal ? 500 : 400, null, fault);
        }
      }
      ctx.status = 202;
      return;
    }
    if (initializing) {
      try {
        const { result, client: facts } = await methods.initialize(message);
        ctx.set('Mcp-Session-Id', ids.newSession(principal.username, facts));
        ctx.body = { jsonrpc: '2.0', id: message.id, result };
      } catch (err) {
        sendError(ctx, 200, message.id, methods.faultOf(err));
      }
      return;
    }
    const streams = STREAMING_METHODS.has(message.method) && /text\/event-stream|\*\/\*/.test(ctx.get('accept') || '*/*');
    if (!streams) {
      // Nothing can be sent before the answer: notifications and requests are left out (a client that takes no SSE).
      const channel: Channel = { send: async () => undefined, get open() { return !ctx.req.socket.destroyed; } };
      try {
        ctx.body = { jsonrpc: '2.0', id: message.id, result: await methods.request(caller, message, channel) };
      } catch (err) {
        sendError(ctx, 200, message.id, methods.faultOf(err));
      }
      return;
    }
    const out = openStream(ctx);
    let eventId: string | undefined;
    const progressToken = (message.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    const channel: Channel = {
      send: (m) => out.send('message', JSON.stringify(m), eventId),
      get open() {
        return out.open;
      },
      resumable(taskId) {
        eventId = encodeResume({ taskId, requestId: message.id, method: message.method as ResumePoint['method'], ...(progressToken !== undefined ? { progressToken } : {}) });
        out.prime(eventId, RESUME_RETRY_MS);
      },
    };
    // The answer is written from here on, whatever happens: the stream is open.
    answerOn(out, message.id, () => methods.request(caller, message, channel), () => eventId);
  };

  /** `GET` with the `Last-Event-ID` of a broken answer stream: the rest of that answer (methods.ts `resume`). */
  const resume = (ctx: Context, caller: Caller, point: ResumePoint) => {
    const out = openStream(ctx);
    const eventId = encodeResume(point);
    out.prime(eventId, RESUME_RETRY_MS);
    const channel: Channel = { send: (m) => out.send('message', JSON.stringify(m), eventId), get open() { return out.open; } };
    answerOn(out, point.requestId, () => methods.resume(caller, point, channel), () => eventId);
  };

  /** `GET`: a stream of `notifications/tools/list_changed` when the profile's tasks change (tool-watch.ts). */
  const get = (ctx: Context, principal: McpPrincipal, profile: string) => {
    if (!/text\/event-stream|\*\/\*/.test(ctx.get('accept') || '')) {
      ctx.set('Allow', 'POST, DELETE');
      return sendError(ctx, 405, null, new McpFault(RPC.invalidRequest, 'GET opens an event stream: send Accept: text/event-stream'));
    }
    const lastEvent = ctx.get('last-event-id');
    if (lastEvent) {
      const point = decodeResume(lastEvent);
      if (!point) return sendError(ctx, 400, null, new McpFault(RPC.invalidRequest, 'Last-Event-ID: not an event id of this server'));
      const session = ctx.get('mcp-session-id');
      const client = (session && ids.sessionOf(session, principal.username)) || ELICITS_NOTHING;
      return resume(ctx, { principal, profile, protocolVersion: ctx.get('mcp-protocol-version') || PROTOCOL_VERSIONS[1], ...client }, point);
    }
    const out = openStream(ctx);
    const stop = toolWatch.subscribe(principal.username, profile, () => void out.send('message', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })));
    out.onClose(stop);
  };

  const middleware: Middleware = async (ctx, next) => {
    const meta = METADATA.exec(ctx.path);
    if (meta && (ctx.method === 'GET' || ctx.method === 'HEAD')) return metadata(ctx, meta[1] ?? DEFAULT_PROFILE);
    const match = ENDPOINT.exec(ctx.path);
    if (!match) return next();
    const profile = match[1] ?? DEFAULT_PROFILE;
    ctx.set('Cache-Control', 'no-store');
    if (!originAllowed(ctx)) return sendError(ctx, 403, null, new McpFault(RPC.invalidRequest, 'forbidden: this Origin or Host is not allowed (DNS rebinding protection)'));
    if (!NAME_PATTERN.test(profile)) return sendError(ctx, 404, null, new McpFault(RPC.invalidRequest, `profile "${profile.slice(0, 64)}" not found`));
    let principal: McpPrincipal | null;
    try {
      principal = await authenticate(ctx);
    } catch (err) {
      return sendError(ctx, 503, null, methods.faultOf(err));
    }
    if (!principal) {
      ctx.set('WWW-Authenticate', `Bearer resource_metadata="${metadataUrl(profile)}"`);
      return sendError(ctx, 401, null, new McpFault(RPC.unauthorized, 'unauthorized: send Authorization: Bearer <token>'));
    }
    if (!allowsProfile(principal, profile)) {
      return sendError(ctx, 403, null, new McpFault(RPC.unauthorized, `this access token is not for profile "${profile}"`, { code: 'profile_not_allowed' }));
    }
    const known = (await profiles.get(`${principal.username}\n${profile}`, async () => !!(await findProfile(models, principal.username, profile))).catch(() => undefined));
    if (known === undefined) return sendError(ctx, 503, null, new McpFault(RPC.unavailable, 'MongoDB did not answer in time; retry in a moment', { retry_after: 1 }));
    if (!known) return sendError(ctx, 404, null, new McpFault(RPC.invalidRequest, `profile "${profile}" not found`));
    if (ctx.method === 'POST') return post(ctx, principal, profile);
    if (ctx.method === 'GET') return get(ctx, principal, profile);
    if (ctx.method === 'DELETE') {
      // Nothing is kept of a session: ending one is a no-op.
      ctx.status = 204;
      return;
    }
    ctx.set('Allow', 'GET, POST, DELETE');
    sendError(ctx, 405, null, new McpFault(RPC.invalidRequest, `method ${ctx.method} is not allowed here`));
  };
  return {
    middleware,
    /** Ends the open streams (the app is closing): their clients resume on another process. */
    close() {
      for (const out of [...streams]) out.end();
    },
  };
}
