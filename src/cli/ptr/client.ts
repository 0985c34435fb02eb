import { Failure, UsageError } from './errors';

export interface RequestOptions {
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as they are, with `contentType`. */
  bytes?: Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | undefined>;
  /** No session cookie (a signed URL is its own credential). */
  anonymous?: boolean;
}

export interface Answer {
  status: number;
  headers: Headers;
  /** The parsed JSON body; undefined when there is none (204). */
  body: any;
}

export type ApiClient = ReturnType<typeof createClient>;

/** How long a request (not an event stream) may take, answer included, before it fails (`timeout`). */
export const REQUEST_TIMEOUT_MS = 30_000;

const NO_SESSION =
  'no session: set MCP_RUN_SESSION_ID, or run `ptr login --session ID` (or `ptr session create --user NAME` on the server\'s machine)';

/**
 * The API over HTTP, with `Cookie: sessionId=<session>`. Paths are relative to `origin`; absolute URLs the API
 * answered (signed URLs, run URLs, built from its PUBLIC_URL) are requested on the configured origin's host, so a
 * CLI pointed at another address than PUBLIC_URL (a tunnel, a container's port) still reaches them.
 * Throws Failure for an error answer (`code` and `message` as the API gave them), an unreachable API, or one that
 * does not answer within `timeoutMs` (REQUEST_TIMEOUT_MS by default).
 */
export function createClient(settings: { origin: string; session?: string; timeoutMs?: number }) {
  const { origin, timeoutMs = REQUEST_TIMEOUT_MS } = settings;

  const urlOf = (target: string, query?: Record<string, string | undefined>): string => {
    let url: URL;
    if (/^https?:\/\//.test(target)) {
      url = new URL(target);
      if (!target.startsWith(`${origin}/`)) url = new URL(`${url.pathname}${url.search}`, new URL(origin).origin);
    } else {
      url = new URL(`${origin}${target}`);
    }
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    return url.toString();
  };

  const headersFor = (options: RequestOptions): Record<string, string> => {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (!options.anonymous) {
      if (!settings.session) throw new UsageError(NO_SESSION);
      headers.cookie = `sessionId=${settings.session}`;
    }
    return headers;
  };

  const send = async (method: string, target: string, options: RequestOptions, signal?: AbortSignal): Promise<Response> => {
    const headers = headersFor(options);
    let body: string | Uint8Array | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (options.bytes) {
      body = options.bytes;
      headers['content-type'] = options.contentType ?? 'application/octet-stream';
    }
    const url = urlOf(target, options.query);
    try {
      return await fetch(url, { method, headers, body, signal });
    } catch (err) {
      if (signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new Failure('connection_failed', `cannot reach ${new URL(url).origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
  };

  const request = async (method: string, target: string, options: RequestOptions = {}): Promise<Answer> => {
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await send(method, target, options, signal);
      text = await res.text();
    } catch (err) {
      if (signal.aborted) throw new Failure('timeout', `${method} ${target}: no answer within ${timeoutMs / 1000} s`);
      throw err;
    }
    if (!res.ok) throw failureOf(res.status, text);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      throw new Failure('invalid_answer', `${method} ${target}: the API answered ${res.status} with a body that is not JSON`, res.status);
    }
    return { status: res.status, headers: res.headers, body };
  };

  return {
    origin,
    request,
    get: (path: string, options?: RequestOptions) => request('GET', path, options),
    put: (path: string, options?: RequestOptions) => request('PUT', path, options),
    post: (path: string, options?: RequestOptions) => request('POST', path, options),
    delete: (path: string, options?: RequestOptions) => request('DELETE', path, options),
    /** Opens a Server-Sent Events stream; resolves once its headers arrived (Failure for an error answer). */
    async stream(path: string, lastEventId: number | undefined, signal: AbortSignal): Promise<Response> {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
      const res = await send('GET', path, { headers }, signal);
      if (!res.ok) throw failureOf(res.status, await res.text());
      // A page that is not an event stream (a portal, another service at this origin) would never bring an event.
      const type = res.headers.get('content-type') ?? '';
      if (!type.startsWith('text/event-stream')) {
        await res.body?.cancel();
        throw new Failure('invalid_answer', `${path}: expected an event stream, got ${type || 'no content type'} (is ${origin} the API?)`);
      }
      return res;
    },
  };
}

/** An error answer as the API words it: `{"error": {"code", "message"}}`; anything else named by its status. */
function failureOf(status: number, text: string): Failure {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === 'string') return new Failure(error.code, typeof error.message === 'string' ? error.message : '', status);
  } catch {
    // not the API's error shape: named by its status below
  }
  return new Failure(`http_${status}`, text.trim().slice(0, 200) || `the API answered ${status}`, status);
}

/** `~` (the session's user) and a name, as a path segment each. */
export const seg = (name: string) => encodeURIComponent(name);
