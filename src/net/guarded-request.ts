import { request, type Dispatcher } from 'undici';
import { checkUrl, urlHost } from './address-guard';
import type { NetworkPolicy } from './network-policy';
import { AddressRefusedError } from './pinned-agent';

export interface GuardedRequestOptions {
  policy: NetworkPolicy;
  /** The pinned agent (createPinnedAgent): it checks every resolved address before connecting. */
  dispatcher: Dispatcher;
  /** A further refusal after the policy's, by host (an install's allowed hosts): the reason, or undefined to go on. */
  refuseHost?: (host: string) => string | undefined;
}

/**
 * What one guarded request came to. Never a throw: `refused` (the policy, at the URL or at connection time, or
 * `refuseHost`), `failed` (no answer: `timeout` when the caller's signal or the connection's time limit cut it; `error`
 * is what undici threw, for callers that tell a refused connection from a lost one), or the receiver's answer, whose
 * body the caller reads or dumps.
 */
export type GuardedAnswer =
  | { refused: string }
  | { failed: string; timeout: boolean; error: unknown }
  | { response: Dispatcher.ResponseData<unknown> };

/**
 * One request through the network guard (servlets' fetches, webhook deliveries, MCP sessions): the URL checked against
 * the policy, connected only to addresses the pinned agent checked. No redirect is followed: a 3xx is an answer.
 */
export async function guardedRequest(url: URL, init: Omit<NonNullable<Parameters<typeof request>[1]>, 'dispatcher'>, options: GuardedRequestOptions): Promise<GuardedAnswer> {
  const verdict = checkUrl(url, options.policy);
  if (!verdict.allowed) return { refused: verdict.reason! };
  const refusedHost = options.refuseHost?.(urlHost(url));
  if (refusedHost !== undefined) return { refused: refusedHost };
  try {
    return { response: await request(url.href, { ...init, dispatcher: options.dispatcher }) };
  } catch (err) {
    const refused = findRefusal(err);
    if (refused) return { refused: refused.message };
    return { failed: errorText(err), timeout: isTimeout(err), error: err };
  }
}

/** undici may wrap the lookup's error; look through `cause` too. */
export function findRefusal(err: unknown): AddressRefusedError | undefined {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof AddressRefusedError) return e;
  }
  return undefined;
}

/** Cut by the caller's signal (its time limit), or no connection within the agent's connect time limit. */
export function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | undefined;
  return e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.code === 'UND_ERR_ABORTED' || e?.code === 'UND_ERR_CONNECT_TIMEOUT';
}

export function errorText(err: unknown): string {
  const e = err as { code?: string; message?: string } | undefined;
  const text = e?.message ?? String(err);
  return e?.code && !text.includes(e.code) ? `${e.code}: ${text}` : text;
}

/** A response header's first value (undici gives a repeated one as a list). */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** undici's response headers as the Fetch API's; a header the Fetch API cannot carry is dropped rather than failing the answer. */
export function responseHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      try {
        headers.append(name, v);
      } catch {
        // dropped: see above
      }
    }
  }
  return headers;
}
