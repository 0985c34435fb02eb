import { connectDb } from '../../src/store/connect';
import { createSession } from '../../src/store/sessions';
import { api, uniqueUser, type Api, type ApiResponse } from '../helpers/api';
import { clusterStack } from './harness';

/** A user with a session, and a client of each API for it. */
export async function signedInOnBoth(): Promise<{ user: string; sessionId: string; apis: Api[] }> {
  const { mongoUrl, apiUrls } = clusterStack();
  const user = uniqueUser('cl');
  const db = await connectDb(mongoUrl);
  try {
    const { id } = await createSession(db.models, user, 24);
    return { user, sessionId: id, apis: apiUrls.map((url) => api(id, url)) };
  } finally {
    await db.close();
  }
}

/** The signed URL `url` as served by API `base` (each API's PUBLIC_URL is its own address). */
export const via = (url: string, base: string) => base + url.slice(new URL(url).origin.length);

/**
 * A client behind a load balancer: each request to the next API in turn; a refused connection or a 503 is asked
 * again of the other, until `timeoutMs`.
 */
export function balanced(apis: Api[], timeoutMs = 120_000) {
  let next = 0;
  return async (call: (a: Api) => Promise<ApiResponse>): Promise<ApiResponse> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const a = apis[next++ % apis.length]!;
      const res = await call(a).catch(() => undefined);
      if (res && res.status !== 503) return res;
      if (Date.now() > deadline) throw new Error(`no API answered within ${timeoutMs} ms (last: ${res?.status} ${res?.text})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
}

export async function postSignedTo(url: string, body: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}
