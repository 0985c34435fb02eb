import type { Dispatcher } from 'undici';
import type { Logger } from '../../src/logger';
import { errorText, findRefusal, guardedRequest, headerValue, isTimeout, responseHeaders, type GuardedRequestOptions } from '../../src/net/guarded-request';
import { domainsAllow } from '../../src/net/network-policy';

export interface GuardedFetchOptions extends Pick<GuardedRequestOptions, 'policy' | 'dispatcher'> {
  /** The install's allowed host globs: null or ['*'] = any host outside the blocklist, [] = none. */
  domains: string[] | null;
  maxResponseBytes: number;
  maxRedirects: number;
  logger?: Logger;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers the transport owns; undici refuses some of them outright, so a servlet's are dropped. */
const TRANSPORT_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'te', 'trailer'];
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const TIME_LIMIT = "the request did not finish within the servlet's time limit";

/**
 * A `fetch` for Extism's `fetch` option. It NEVER throws: a host function that throws poisons the plugin and the
 * next call hangs. A refused request answers 403, a failed one 502, one cut by the time limit 504, each with a
 * readable text body. Every redirect hop is followed here and checked like the first request.
 */
export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    try {
      return await fetchChecked(input, init ?? {}, options);
    } catch (err) {
      // What guardedRequest does not answer: the body cut while it is read, a URL that is none.
      const refused = findRefusal(err);
      if (refused) return refuse(refused.message, options.logger);
      if (isTimeout(err)) return failure(504, TIME_LIMIT);
      return failure(502, `the request failed: ${errorText(err)}`);
    }
  };
  return guarded as typeof fetch;
}

async function fetchChecked(input: string | URL | Request, init: RequestInit, options: GuardedFetchOptions): Promise<Response> {
  const source = typeof input === 'string' || input instanceof URL ? undefined : input;
  let url = new URL(source ? source.url : String(input));
  let method = (init.method ?? source?.method ?? 'GET').toUpperCase();
  const headers = new Headers(init.headers ?? source?.headers);
  for (const name of TRANSPORT_HEADERS) headers.delete(name);
  let body = await bodyBytes(init.body ?? (source && source.body ? await source.arrayBuffer() : undefined));
  const signal = init.signal ?? source?.signal ?? undefined;

  const refuseHost = (host: string) => {
    if (domainsAllow(host, options.domains)) return undefined;
    return options.domains?.length ? `host ${host} is not among this install's allowed hosts` : 'this install may not use the network';
  };
  for (let hop = 0; ; hop++) {
    const answer = await guardedRequest(url, { method: method as Dispatcher.HttpMethod, headers: Object.fromEntries(headers), body, signal }, { ...options, refuseHost });
    if ('refused' in answer) return refuse(answer.refused, options.logger);
    if ('failed' in answer) return answer.timeout ? failure(504, TIME_LIMIT) : failure(502, `the request failed: ${answer.failed}`);
    const res = answer.response;

    const location = headerValue(res.headers, 'location');
    if (REDIRECTS.has(res.statusCode) && location !== undefined) {
      await res.body.dump();
      if (hop >= options.maxRedirects) return failure(502, `more than ${options.maxRedirects} redirects`);
      const next = new URL(location, url);
      // what browsers do: 303 (and 301/302 after a POST) continue as a GET without the body
      if ((res.statusCode === 303 && method !== 'HEAD') || ((res.statusCode === 301 || res.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        for (const name of ['content-type', 'content-length', 'content-encoding']) headers.delete(name);
      }
      // a servlet's credentials are for the host it named, not for wherever that host sends it
      if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
      url = next;
      continue;
    }

    const bytes = await readCapped(res.body, options.maxResponseBytes);
    if (!bytes) return failure(502, `the response body is over the ${options.maxResponseBytes}-byte limit`);
    if (res.statusCode < 200 || res.statusCode > 599) return failure(502, `unexpected status ${res.statusCode}`);
    const nullBody = method === 'HEAD' || res.statusCode === 204 || res.statusCode === 205 || res.statusCode === 304;
    return new Response(nullBody ? null : bytes, { status: res.statusCode, headers: responseHeaders(res.headers) });
  }
}

async function readCapped(body: Dispatcher.ResponseData['body'], max: number): Promise<Uint8Array | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}

async function bodyBytes(body: unknown): Promise<Uint8Array | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof Blob) return new Uint8Array(await body.arrayBuffer());
  throw new Error('unsupported request body type');
}

function refuse(reason: string, logger?: Logger): Response {
  logger?.warn({ reason }, 'servlet network request refused');
  return new Response(`servlet network request refused: ${reason}`, {
    status: 403,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
  });
}

function failure(status: number, message: string): Response {
  return new Response(`servlet network request failed: ${message}`, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
  });
}
