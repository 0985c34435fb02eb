import crypto, { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { readBody } from './net';

/**
 * A small OAuth authorization server and an MCP server (the SDK's) that requires its tokens, each on its own loopback
 * port, in this process (the tests read `stats` directly and revoke tokens on the server side).
 *
 * Authorization server (`asBase`):
 * - `/.well-known/oauth-authorization-server`: RFC 8414 metadata (issuer, token_endpoint, the auth methods set);
 *   `/.well-known/openid-configuration` instead when `metadata` is `openid`
 * - `/token`: the client credentials grant; the client authenticates with client_secret_basic, client_secret_post or
 *   private_key_jwt (the assertion's signature checked with the registered public key, its iss, sub, aud and exp);
 *   tokens expire after `expiresIn` seconds. A bad client gets 401 `invalid_client` whose description quotes the
 *   secret it was sent (a careless server may do that)
 *
 * MCP server (`mcpUrl`, path `/mcp`): a tool `whoami` answering the client id of the token. A request without a valid
 * token gets 401 with `WWW-Authenticate: Bearer resource_metadata="<base>/meta/prm"` (not the well-known path, so that
 * following the header is what finds it); `/.well-known/oauth-protected-resource/plain` serves the metadata of
 * `/plain`, the same server whose 401 names no metadata (found at the well-known path).
 */
export interface OAuthServers {
  asBase: string;
  tokenUrl: string;
  /** The MCP server whose 401 names its metadata. */
  mcpUrl: string;
  /** The same MCP server; its 401 says only `Bearer` (metadata at the well-known path). */
  plainUrl: string;
  stats: OAuthStats;
  /** Registers a client: a secret, or a public key (PEM) for private_key_jwt. */
  client(id: string, auth: { secret: string } | { publicKey: string }): void;
  /** How long tokens issued from now on live (seconds); undefined: no `expires_in`. */
  expiresIn: number | undefined;
  /** The auth methods the metadata lists. */
  authMethods: string[];
  /** Which well-known document the authorization server serves (`none`: neither). */
  metadata: 'oauth' | 'openid' | 'none';
  /** Every token issued so far is refused from now on. */
  revokeAll(): void;
  close(): Promise<void>;
}

export interface OAuthStats {
  /** Token requests that got a token, per client id; and that were refused. */
  issued: Record<string, number>;
  refused: number;
  /** What each token request said (the last one last). */
  requests: Array<{ clientId: string; method: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'; resource: string | null; scope: string | null }>;
  /** 401s the MCP server answered. */
  unauthorized: number;
  /** Tokens sent on MCP requests that were accepted (every one of them). */
  bearerSeen: Set<string>;
  calls: number;
}

export async function startOAuthServers(): Promise<OAuthServers> {
  const stats: OAuthStats = { issued: {}, refused: 0, requests: [], unauthorized: 0, bearerSeen: new Set(), calls: 0 };
  const clients = new Map<string, { secret: string } | { publicKey: string }>();
  const tokens = new Map<string, { clientId: string; expiresAt: number; revoked: boolean }>();
  const sockets = new Set<net.Socket>();
  const state = { expiresIn: 3600 as number | undefined, authMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'], metadata: 'oauth' as 'oauth' | 'openid' | 'none' };

  const track = (server: http.Server) =>
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  const listen = (server: http.Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  const json = (res: http.ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  const as = http.createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const body = await readBody(req);
      const metadata = { issuer: asBase, token_endpoint: `${asBase}/token`, grant_types_supported: ['client_credentials'], token_endpoint_auth_methods_supported: state.authMethods };
      if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server' && state.metadata === 'oauth') return json(res, 200, metadata);
      if (req.method === 'GET' && path === '/.well-known/openid-configuration' && state.metadata === 'openid') return json(res, 200, metadata);
      if (req.method !== 'POST' || path !== '/token') return json(res, 404, { error: 'not_found' });
      const form = new URLSearchParams(body);
      const refuse = (sent: string) => {
        stats.refused++;
        json(res, 401, { error: 'invalid_client', error_description: `client authentication failed; you sent ${sent}` });
      };
      if (form.get('grant_type') !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
      let clientId: string;
      let method: OAuthStats['requests'][number]['method'];
      const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
      if (basic) {
        const [id, secret] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':').map((s) => decodeURIComponent(s.replace(/\+/g, ' ')));
        const client = clients.get(id ?? '');
        if (!client || !('secret' in client) || client.secret !== secret) return refuse(`${id}:${secret}`);
        [clientId, method] = [id!, 'client_secret_basic'];
      } else if (form.get('client_assertion')) {
        const id = form.get('client_id') ?? '';
        const client = clients.get(id);
        const assertion = form.get('client_assertion')!;
        if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return refuse('a bad client_assertion_type');
        if (!client || !('publicKey' in client) || !verifyJwt(assertion, client.publicKey, id, asBase)) return refuse(assertion);
        [clientId, method] = [id, 'private_key_jwt'];
      } else {
        const id = form.get('client_id') ?? '';
        const secret = form.get('client_secret') ?? '';
        const client = clients.get(id);
        if (!client || !('secret' in client) || client.secret !== secret) return refuse(`${id}:${secret}`);
        [clientId, method] = [id, 'client_secret_post'];
      }
      stats.requests.push({ clientId, method, resource: form.get('resource'), scope: form.get('scope') });
      stats.issued[clientId] = (stats.issued[clientId] ?? 0) + 1;
      const token = `at-${crypto.randomBytes(16).toString('hex')}`;
      tokens.set(token, { clientId, expiresAt: state.expiresIn === undefined ? Infinity : Date.now() + state.expiresIn * 1000, revoked: false });
      json(res, 200, { access_token: token, token_type: 'Bearer', ...(state.expiresIn !== undefined ? { expires_in: state.expiresIn } : {}) });
    })().catch((err) => res.writeHead(500).end(String(err)));
  });
  track(as);
  const asBase = `http://127.0.0.1:${await listen(as)}`;

  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const mcp = http.createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const prm = (resource: string) => json(res, 200, { resource, authorization_servers: [asBase] });
      if (req.method === 'GET' && path === '/meta/prm') return prm(`${mcpBase}/mcp`);
      if (req.method === 'GET' && path === '/.well-known/oauth-protected-resource/plain') return prm(`${mcpBase}/plain`);
      if (path !== '/mcp' && path !== '/plain') return json(res, 404, { error: 'not found' });
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      const token = bearer ? tokens.get(bearer) : undefined;
      if (!token || token.revoked || Date.now() >= token.expiresAt) {
        stats.unauthorized++;
        await readBody(req);
        const challenge = path === '/mcp' ? `Bearer resource_metadata="${mcpBase}/meta/prm"` : 'Bearer';
        return void res.writeHead(401, { 'www-authenticate': challenge, 'content-type': 'text/plain' }).end(`unauthorized: you sent ${req.headers.authorization ?? '(nothing)'}`);
      }
      stats.bearerSeen.add(bearer!);
      const body = req.method === 'POST' ? JSON.parse((await readBody(req)) || 'null') : undefined;
      const sessionId = req.headers['mcp-session-id'];
      let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId !== undefined || body?.method !== 'initialize') return json(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: body?.id ?? null });
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, created) });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        const server = new McpServer({ name: 'oauth-protected', version: '1.0.0' });
        server.registerTool('whoami', { description: 'The client id of the token', annotations: { readOnlyHint: true } }, async (extra) => {
          stats.calls++;
          const sent = /^Bearer (\S+)$/.exec(String(extra.requestInfo?.headers.authorization ?? ''))?.[1];
          return { content: [{ type: 'text', text: `client ${sent ? tokens.get(sent)?.clientId : '(none)'}` }] };
        });
        await server.connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })().catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
      else res.destroy();
    });
  });
  track(mcp);
  const mcpBase = `http://127.0.0.1:${await listen(mcp)}`;

  return {
    asBase,
    tokenUrl: `${asBase}/token`,
    mcpUrl: `${mcpBase}/mcp`,
    plainUrl: `${mcpBase}/plain`,
    stats,
    client: (id, auth) => void clients.set(id, auth),
    get expiresIn() {
      return state.expiresIn;
    },
    set expiresIn(value) {
      state.expiresIn = value;
    },
    get authMethods() {
      return state.authMethods;
    },
    set authMethods(value) {
      state.authMethods = value;
    },
    get metadata() {
      return state.metadata;
    },
    set metadata(value) {
      state.metadata = value;
    },
    revokeAll() {
      for (const t of tokens.values()) t.revoked = true;
    },
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      for (const s of sockets) s.destroy();
      await Promise.all([as, mcp].map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}

/** A JWT client assertion: signature by the key, iss = sub = the client, aud the issuer or its token endpoint, not expired. */
function verifyJwt(jwt: string, publicKeyPem: string, clientId: string, issuer: string): boolean {
  const [head, payload, signature] = jwt.split('.');
  if (!head || !payload || !signature) return false;
  const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: string };
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { iss?: string; sub?: string; aud?: string; exp?: number; jti?: string };
  const key = crypto.createPublicKey(publicKeyPem);
  const hash = header.alg === 'EdDSA' ? null : `sha${header.alg?.slice(2) ?? '256'}`;
  const ok = crypto.verify(hash, Buffer.from(`${head}.${payload}`), header.alg?.startsWith('ES') ? { key, dsaEncoding: 'ieee-p1363' } : key, Buffer.from(signature, 'base64url'));
  return ok && claims.iss === clientId && claims.sub === clientId && (claims.aud === issuer || claims.aud?.split('?')[0] === `${issuer}/token`) && typeof claims.exp === 'number' && claims.exp * 1000 > Date.now() && typeof claims.jti === 'string';
}

