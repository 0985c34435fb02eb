import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

/** Every answer of 401 means the session is gone (or never was): the app shows its sign-in page. */
export const SIGNED_OUT = 'ptr-signed-out';

const signedOutOn401: Middleware = {
  onResponse({ response }) {
    if (response.status === 401) window.dispatchEvent(new Event(SIGNED_OUT));
    return response;
  },
};

/** The API, typed from its own OpenAPI document (generated at build: scripts/build.sh). Same origin, the session cookie. */
export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use(signedOutOn401);

/** An error the API answered, in its `{"error": {"code", "message"}}` shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's data, or an ApiError with the API's message (which names the field at fault). */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { error?: { code?: string; message?: string } };
  throw new ApiError(response.status, body.error?.code ?? String(response.status), body.error?.message ?? `${response.status} ${response.statusText}`);
}

/** The message to show for a failed call. */
export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The `cursor` of the next page, from an answer's `Link: <…?cursor=…>; rel="next"`. */
export function nextCursor(response: Response): string | undefined {
  const link = response.headers.get('link');
  const match = link?.match(/<([^>]*)>\s*;\s*rel="next"/);
  if (!match) return undefined;
  return new URL(match[1]!, location.origin).searchParams.get('cursor') ?? undefined;
}

/** POST/PUT/DELETE with a JSON body to a same-origin path the generated types do not cover (a signed URL, sign-in). */
export async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401 && !path.startsWith('/api/sign-in')) window.dispatchEvent(new Event(SIGNED_OUT));
  return response;
}

/** The answer's JSON, or an ApiError as `ok` throws it. */
export async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  const body = text ? (JSON.parse(text) as unknown) : undefined;
  if (response.ok) return body as T;
  const error = (body ?? {}) as { error?: { code?: string; message?: string } };
  throw new ApiError(response.status, error.error?.code ?? String(response.status), error.error?.message ?? `${response.status} ${response.statusText}`);
}
