import crypto from 'node:crypto';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LRUCache } from 'lru-cache';
import type { Dispatcher } from 'undici';
import { guardedRequest } from '../net/guarded-request';
import type { NetworkPolicy } from '../net/network-policy';
import { McpTransportFailure } from './errors';
import { checkMcpUrl, displayUrl } from './policy';

/**
 * OAuth client credentials for an MCP server (the MCP extension `io.modelcontextprotocol/oauth-client-credentials`,
 * docs/mcp.md "OAuth client credentials"). `clientSecret` and `privateKey` are secrets, as is every token: none of them
 * ever reaches a message or a log.
 */
export interface McpOAuthClient {
  /** The token endpoint; absent: discovered (RFC 9728 protected-resource metadata, then RFC 8414 / OpenID metadata). */
  tokenUrl?: string;
  clientId: string;
  /** `client_secret_basic` (or `client_secret_post` when the metadata says only that). */
  clientSecret?: string;
  scope?: string;
  /** A PEM private key: `private_key_jwt` (RFC 7523). */
  privateKey?: string;
}

export interface OAuthOptions {
  policy: NetworkPolicy;
  dispatcher: Dispatcher;
  /** Each request to the authorization server (metadata, token) within this. */
  connectTimeoutMs: number;
}

/** The largest metadata document or token answer read. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** How long a token is used at most before its `expires_in`: a tenth of its life, at most 30 s. */
const EARLY_MAX_MS = 30_000;
/** A token without `expires_in` is used until the server refuses it (a 401 fetches a new one). */
const ASSERTION_LIFETIME_S = 300;
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

interface Endpoint {
  url: string;
  /** `token_endpoint_auth_methods_supported`, when metadata said. */
  methods?: string[];
  /** The authorization server's issuer, when metadata said: the audience of a client assertion. */
  issuer?: string;
}

interface InstallTokens {
  endpoint?: Endpoint;
  token?: { value: string; usableUntil: number };
  pending?: Promise<string>;
}

/** Per install (its URL and OAuth client), per process: the token endpoint found and the token obtained. */
const tokens = new LRUCache<string, InstallTokens>({ max: 1_000 });

const OAUTH = Symbol('mcp oauth client');

/**
 * The headers with the OAuth client attached, not as a header (a symbol: never enumerated, never sent or serialized).
 * A call target travels as `{ url, headers }` through code that knows nothing of OAuth (activities/mcp-call.ts).
 */
export function headersWithOAuth(headers: Record<string, string>, oauth: McpOAuthClient | undefined): Record<string, string> {
  if (!oauth) return headers;
  const out = { ...headers };
  Object.defineProperty(out, OAUTH, { value: oauth, enumerable: false });
  return out;
}

/** The server's OAuth client: its own `oauth`, or the one attached to its headers. */
export function oauthOf(server: { oauth?: McpOAuthClient; headers?: Record<string, string> }): McpOAuthClient | undefined {
  return server.oauth ?? (server.headers as Record<symbol, McpOAuthClient | undefined> | undefined)?.[OAUTH];
}

function cacheKey(serverUrl: string, oauth: McpOAuthClient): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([serverUrl, oauth.tokenUrl ?? null, oauth.clientId, oauth.clientSecret ?? null, oauth.scope ?? null, oauth.privateKey ?? null]))
    .digest('base64url');
}

/** The secrets of an OAuth client and its current token, for redaction. */
export function oauthSecrets(serverUrl: string, oauth: McpOAuthClient | undefined): Record<string, string> {
  if (!oauth) return {};
  const out: Record<string, string> = {};
  if (oauth.clientSecret) out.client_secret = oauth.clientSecret;
  // The key's base64 lines, not its armour: "PRIVATE" is no secret, and removing it would garble messages.
  if (oauth.privateKey) out.private_key = oauth.privateKey.replace(/-----[^-]*-----/g, ' ');
  const token = tokens.peek(cacheKey(serverUrl, oauth))?.token?.value;
  if (token) out.token = token;
  return out;
}

/** Forgets every token and endpoint (tests). */
export function clearOAuthTokens(): void {
  tokens.clear();
}

const failure = (message: string) => new McpTransportFailure('oauth', false, `no OAuth token could be obtained: ${message}`);

/**
 * The MCP transport's fetch with `Authorization: Bearer <token>` on every request. The token comes from the cache while
 * it is good; when there is none and no token endpoint is known yet, the request goes without one, and the server's 401
 * (its `WWW-Authenticate` naming the protected-resource metadata) starts the discovery. A 401 to a request that carried
 * a token fetches a new token and sends the request once more (once per request). Throws McpTransportFailure `oauth`
 * when no token can be obtained.
 */
export function createOAuthFetch(fetch: FetchLike, serverUrl: string, oauth: McpOAuthClient, options: OAuthOptions): FetchLike {
  const key = cacheKey(serverUrl, oauth);
  const state = (): InstallTokens => {
    let s = tokens.get(key);
    if (!s) tokens.set(key, (s = {}));
    return s;
  };

  /**
   * One token request at a time per install: concurrent requests wait for the same one. It is not ended by one
   * caller's signal (the others still want the token), only by MCP_CONNECT_TIMEOUT_MS per request; a caller whose
   * signal aborts stops waiting.
   */
  async function obtain(signal: AbortSignal | undefined, challenge: string | null): Promise<string> {
    const s = state();
    s.pending ??= (async () => {
      try {
        s.endpoint ??= oauth.tokenUrl ? { url: oauth.tokenUrl } : await discoverEndpoint(serverUrl, challenge, options, undefined);
        const got = await requestToken(serverUrl, oauth, s.endpoint, options, undefined);
        s.token = got;
        return got.value;
      } finally {
        s.pending = undefined;
      }
    })();
    return untilAborted(s.pending, signal);
  }

  const current = (): string | undefined => {
    const t = tokens.get(key)?.token;
    return t && Date.now() < t.usableUntil ? t.value : undefined;
  };

  return async (input, init = {}) => {
    let token = current();
    if (token === undefined && (oauth.tokenUrl || tokens.get(key)?.endpoint)) token = await obtain(init.signal ?? undefined, null);
    const first = await fetch(input, withBearer(init, token));
    if (first.status !== 401) return first;
    const challenge = first.headers.get('www-authenticate');
    await first.body?.cancel().catch(() => undefined);
    const s = state();
    // A token the server refuses is dropped (revoked, or expired early); a newer one another request got is kept.
    if (token !== undefined && s.token?.value === token) s.token = undefined;
    const fresh = current() ?? (await obtain(init.signal ?? undefined, challenge));
    return fetch(input, withBearer(init, fresh));
  };
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function withBearer(init: RequestInit, token: string | undefined): RequestInit {
  if (token === undefined) return init;
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/** The `resource_metadata` parameter of a `WWW-Authenticate: Bearer …` challenge. */
export function resourceMetadataOf(challenge: string | null): string | undefined {
  const m = challenge?.match(/(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i);
  return m ? (m[1] ?? m[2])!.replace(/\\(.)/g, '$1') : undefined;
}

/** `https://host/.well-known/<name><path>` (RFC 8414 / RFC 9728: the well-known part goes between host and path). */
function wellKnown(base: URL, name: string): URL {
  const path = base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '');
  return new URL(`${base.origin}/.well-known/${name}${path}`);
}

/** The token endpoint from the server's protected-resource metadata and its authorization server's metadata. */
async function discoverEndpoint(serverUrl: string, challenge: string | null, options: OAuthOptions, signal: AbortSignal | undefined): Promise<Endpoint> {
  const server = new URL(serverUrl);
  const candidates: URL[] = [];
  const named = resourceMetadataOf(challenge);
  if (named !== undefined) {
    if (!URL.canParse(named, server.href)) throw failure(`the server's WWW-Authenticate names resource_metadata that is not a URL`);
    candidates.push(new URL(named, server));
  }
  candidates.push(wellKnown(server, 'oauth-protected-resource'));
  if (server.pathname !== '/') candidates.push(new URL('/.well-known/oauth-protected-resource', server.origin));
  const tried: string[] = [];
  let issuer: string | undefined;
  for (const url of candidates) {
    const doc = await getJson(url, options, signal, tried);
    const servers = doc?.authorization_servers;
    if (Array.isArray(servers) && typeof servers[0] === 'string' && URL.canParse(servers[0])) {
      issuer = servers[0];
      break;
    }
    if (doc) tried[tried.length - 1] += ' (no authorization_servers)';
  }
  if (issuer === undefined) throw failure(`no protected-resource metadata names an authorization server (tried ${tried.join('; ')})`);
  const as = new URL(issuer);
  const asCandidates = [wellKnown(as, 'oauth-authorization-server'), wellKnown(as, 'openid-configuration')];
  if (as.pathname !== '/') asCandidates.push(new URL(`${as.href.replace(/\/$/, '')}/.well-known/openid-configuration`));
  const asTried: string[] = [];
  for (const url of asCandidates) {
    const doc = await getJson(url, options, signal, asTried);
    const endpoint = doc?.token_endpoint;
    if (typeof endpoint === 'string' && URL.canParse(endpoint)) {
      const methods = doc!.token_endpoint_auth_methods_supported;
      return {
        url: endpoint,
        ...(Array.isArray(methods) ? { methods: methods.filter((m): m is string => typeof m === 'string') } : {}),
        ...(typeof doc!.issuer === 'string' ? { issuer: doc!.issuer } : {}),
      };
    }
    if (doc) asTried[asTried.length - 1] += ' (no token_endpoint)';
  }
  throw failure(`no metadata of the authorization server ${displayUrl(as)} names a token endpoint (tried ${asTried.join('; ')})`);
}

/** A metadata document, or undefined (and why, in `tried`) when there is none there. Throws when the guard refuses the URL. */
async function getJson(url: URL, options: OAuthOptions, signal: AbortSignal | undefined, tried: string[]): Promise<Record<string, unknown> | undefined> {
  const answer = await send(url, { method: 'GET', headers: { accept: 'application/json' } }, options, signal);
  if ('failed' in answer) {
    tried.push(`${displayUrl(url)}: ${answer.failed}`);
    return undefined;
  }
  if (answer.status !== 200) {
    tried.push(`${displayUrl(url)}: HTTP ${answer.status}`);
    return undefined;
  }
  const doc = parseJson(answer.text);
  if (!doc) tried.push(`${displayUrl(url)}: not a JSON object`);
  return doc;
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** One request to the authorization server through the MCP network guard (https, MCP_ALLOWLIST), its answer capped. */
async function send(
  url: URL,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  options: OAuthOptions,
  signal: AbortSignal | undefined,
): Promise<{ status: number; text: string } | { failed: string }> {
  const verdict = checkMcpUrl(url, options.policy);
  if (!verdict.allowed) throw failure(`the network guard refuses ${displayUrl(url)}: ${verdict.reason}`);
  // A plain controller, not AbortSignal.any/timeout (see activities/linked-abort.ts): collected with the request.
  const controller = new AbortController();
  const follow = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', follow, { once: true });
  const timer = setTimeout(() => controller.abort(new DOMException('no answer in time', 'TimeoutError')), options.connectTimeoutMs);
  try {
    if (signal?.aborted) throw signal.reason;
    const answer = await guardedRequest(url, { ...init, signal: controller.signal }, options);
    if ('refused' in answer) throw failure(`the network guard refuses ${displayUrl(url)}: ${answer.refused}`);
    if ('failed' in answer) {
      if (signal?.aborted) throw signal.reason;
      const code = (answer.error as { code?: string; cause?: { code?: string } })?.cause?.code ?? (answer.error as { code?: string })?.code;
      return { failed: answer.timeout ? 'no answer in time' : code === 'ECONNREFUSED' ? 'connection refused' : `the request failed${code ? ` (${code})` : ''}` };
    }
    const res = answer.response;
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) {
          res.body.destroy();
          return { failed: `an answer over ${MAX_ANSWER_BYTES} bytes` };
        }
        chunks.push(chunk);
      }
    } catch {
      if (signal?.aborted) throw signal.reason;
      return { failed: controller.signal.aborted ? 'no answer in time' : 'the connection broke while it answered' };
    }
    return { status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', follow);
  }
}

/** RFC 6749 2.3.1: the client id and secret form-encoded, then joined for Basic. */
const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');

/** The client credentials grant (RFC 6749 4.4) with the RFC 8707 `resource`: the token and until when to use it. */
async function requestToken(serverUrl: string, oauth: McpOAuthClient, endpoint: Endpoint, options: OAuthOptions, signal: AbortSignal | undefined): Promise<{ value: string; usableUntil: number }> {
  const url = new URL(endpoint.url);
  const where = `the token endpoint ${displayUrl(url)}`;
  const params = new URLSearchParams({ grant_type: 'client_credentials', resource: displayUrl(serverUrl) });
  if (oauth.scope) params.set('scope', oauth.scope);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (oauth.privateKey) {
    params.set('client_id', oauth.clientId);
    params.set('client_assertion_type', JWT_BEARER);
    params.set('client_assertion', clientAssertion(oauth.privateKey, oauth.clientId, endpoint.issuer ?? endpoint.url));
  } else {
    const methods = endpoint.methods;
    const post = methods !== undefined && !methods.includes('client_secret_basic') && methods.includes('client_secret_post');
    if (post) {
      params.set('client_id', oauth.clientId);
      params.set('client_secret', oauth.clientSecret ?? '');
    } else {
      headers.authorization = `Basic ${Buffer.from(`${formEncode(oauth.clientId)}:${formEncode(oauth.clientSecret ?? '')}`).toString('base64')}`;
    }
  }
  const answer = await send(url, { method: 'POST', headers, body: params.toString() }, options, signal);
  if ('failed' in answer) throw failure(`${where}: ${answer.failed}`);
  const doc = parseJson(answer.text);
  if (answer.status !== 200) {
    // Only the OAuth error code, a bare token: a description may quote what it was sent.
    const code = typeof doc?.error === 'string' && /^[\w.-]{1,64}$/.test(doc.error) ? ` (${doc.error})` : '';
    throw failure(`${where} answered HTTP ${answer.status}${code}: check mcp.oauth (client_id, client_secret or private_key, scope)`);
  }
  const value = doc?.access_token;
  if (typeof value !== 'string' || value.length === 0 || !/^[\x21-\x7e]+$/.test(value)) throw failure(`${where} answered without a usable access_token`);
  const type = doc!.token_type;
  if (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer')) throw failure(`${where} answered a token that is not a Bearer token`);
  const expiresIn = typeof doc!.expires_in === 'number' && doc!.expires_in >= 0 ? doc!.expires_in * 1000 : undefined;
  const usableUntil = expiresIn === undefined ? Infinity : Date.now() + expiresIn - Math.min(EARLY_MAX_MS, expiresIn / 10);
  return { value, usableUntil };
}

/** A signed JWT authenticating the client (RFC 7523 section 2.2), with the key's own algorithm. */
export function clientAssertion(privateKeyPem: string, clientId: string, audience: string, now = Date.now()): string {
  const key = crypto.createPrivateKey(privateKeyPem);
  const { alg, hash, dsaEncoding } = algorithmOf(key);
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const iat = Math.floor(now / 1000);
  const input = `${b64({ alg, typ: 'JWT' })}.${b64({ iss: clientId, sub: clientId, aud: audience, iat, exp: iat + ASSERTION_LIFETIME_S, jti: crypto.randomUUID() })}`;
  const signature = crypto.sign(hash, Buffer.from(input), dsaEncoding ? { key, dsaEncoding } : key);
  return `${input}.${signature.toString('base64url')}`;
}

function algorithmOf(key: crypto.KeyObject): { alg: string; hash: string | null; dsaEncoding?: 'ieee-p1363' } {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return { alg: 'RS256', hash: 'sha256' };
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return { alg: 'ES256', hash: 'sha256', dsaEncoding: 'ieee-p1363' };
      if (curve === 'secp384r1') return { alg: 'ES384', hash: 'sha384', dsaEncoding: 'ieee-p1363' };
      if (curve === 'secp521r1') return { alg: 'ES512', hash: 'sha512', dsaEncoding: 'ieee-p1363' };
      throw new Error(`an EC key on ${curve ?? 'an unknown curve'} (expected P-256, P-384 or P-521)`);
    }
    case 'ed25519':
      return { alg: 'EdDSA', hash: null };
    default:
      throw new Error(`a ${key.asymmetricKeyType ?? 'unknown'} key (expected RSA, EC or Ed25519)`);
  }
}

/** Why a PEM cannot sign client assertions, or undefined when it can (the install's check: the key is never quoted). */
export function privateKeyProblem(pem: string): string | undefined {
  try {
    algorithmOf(crypto.createPrivateKey(pem));
    return undefined;
  } catch (err) {
    const message = (err as Error).message;
    return message.startsWith('an ') ? `expected an RSA, EC or Ed25519 private key, not ${message}` : 'expected a PEM private key (-----BEGIN PRIVATE KEY----- …)';
  }
}
