import type { Layer } from '@koa/router';
import type { Context, Middleware } from 'koa';
import { forbidden, unauthorized } from '../../errors';
import type { Models } from '../../store/models';
import { findSession, type SessionLookup } from '../../store/sessions';
import { createTtlCache } from '../../ttl-cache';
import { createTokenAuth, requireProfile, requireScope, type TokenGrant } from '../token-auth';
import { TOKEN_ROUTES } from '../token-routes';

/**
 * The session id a request presents: `Authorization: Bearer <id>` (API clients other than browsers) or
 * `Cookie: sessionId=<id>`; undefined when it presents none. A Bearer token wins over the cookie. Another scheme
 * (`Basic`, from a proxy in front) is not ours to judge and leaves the cookie to decide.
 */
export function presentedSession(ctx: Context): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.get('authorization'));
  if (bearer) return bearer[1];
  return ctx.cookies.get('sessionId') || undefined;
}

export const SESSION_REQUIRED = 'a session is required: `Authorization: Bearer <session id>` or the cookie `sessionId`';

const SESSION_ONLY =
  'this route needs a session (the cookie `sessionId` or `Authorization: Bearer <session id>`): access tokens work only on the task and run routes their scopes name (docs/tokens.md)';

/** The routes @koa/router matched for this request and method (set before any of its middleware runs). */
function matchedRoutes(ctx: Context): Layer[] {
  const matched = (ctx as { matched?: Layer[] }).matched ?? [];
  return matched.filter((layer) => layer.methods.length > 0 && layer.methods.includes(ctx.method));
}

/**
 * Lets an access token through only to the routes of TOKEN_ROUTES, with the scope each needs, for the profiles it
 * is limited to. A path naming another user is left to the route (a 404, as for a session).
 */
function admitToken(ctx: Context, grant: TokenGrant): void {
  const method = ctx.method === 'HEAD' ? 'GET' : ctx.method;
  const layers = matchedRoutes(ctx);
  const routes = layers.map((layer) => TOKEN_ROUTES.get(`${method} ${String(layer.path)}`));
  if (layers.length === 0 || routes.some((r) => r === undefined)) throw forbidden(SESSION_ONLY, 'session_required');
  for (const [i, route] of routes.entries()) {
    requireScope(grant, route!.scope);
    const layer = layers[i]!;
    const params = layer.params(ctx.path, layer.captures(ctx.path), {});
    if (params.user !== '~' && params.user !== grant.username) continue;
    if (route!.profile === 'default') requireProfile(grant, 'default');
    else if (route!.profile === 'path' && params.profile !== undefined) requireProfile(grant, params.profile);
  }
}

/**
 * Requires a session (`Authorization: Bearer <id>` or `Cookie: sessionId=<id>`), or on the task and run routes an
 * access token (`Authorization: Bearer ptr_…`, docs/tokens.md), and sets `ctx.state.username` (and with a token
 * `ctx.state.token`, its grant). Lookups of either are cached for `cacheMs` (default 2 s), so a revoked session or
 * token stops working within that bound; expiry is checked on every request. Concurrent requests of a session share
 * one lookup (single flight), and a session in steady use is looked up again in the background before its answer
 * expires (refresh ahead), so its requests never wait for the database. A failed lookup is not remembered.
 */
export function requireSession(models: Models, cacheMs: number): Middleware {
  const authenticate = sessionAuthenticator(models, cacheMs);
  const tokens = createTokenAuth(models, cacheMs);
  return async (ctx, next) => {
    const grant = await tokens.authenticateToken(ctx.get('authorization'));
    if (grant) {
      admitToken(ctx, grant);
      ctx.state.username = grant.username;
      ctx.state.token = grant;
      return next();
    }
    const session = await authenticate(ctx);
    if (session === undefined) throw unauthorized(SESSION_REQUIRED);
    if (session === null) throw unauthorized('session is unknown, expired or revoked');
    ctx.state.username = session.username;
    return next();
  };
}

/**
 * The session a request presents, looked up as requireSession does (cached for `cacheMs`): its user; `undefined` when
 * the request presents none, `null` when the one it presents is unknown, expired or revoked.
 */
export function sessionAuthenticator(models: Models, cacheMs: number) {
  const cache = createTtlCache<SessionLookup | null>(cacheMs, { refreshAhead: true });
  return async (ctx: Context): Promise<{ username: string } | null | undefined> => {
    const id = presentedSession(ctx);
    if (!id) return undefined;
    const session = await cache.get(id, () => findSession(models, id, Date.now()));
    if (!session || session.expiresAt <= Date.now()) return null;
    return { username: session.username };
  };
}
