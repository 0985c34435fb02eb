import type { Context, Middleware } from 'koa';
import { unauthorized } from '../../errors';
import type { Models } from '../../store/models';
import { findSession, type SessionLookup } from '../../store/sessions';
import { createTtlCache } from '../../ttl-cache';

/**
 * The session id a request presents: `Authorization: Bearer <id>` (API clients other than browsers) or
 * `Cookie: sessionId=<id>`; undefined when it presents none. A Bearer token wins over the cookie. Another scheme
 * (`Basic`, from a proxy in front) is not ours to judge and leaves the cookie to decide.
 */
function presentedSession(ctx: Context): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.get('authorization'));
  if (bearer) return bearer[1];
  return ctx.cookies.get('sessionId') || undefined;
}

export const SESSION_REQUIRED = 'a session is required: `Authorization: Bearer <session id>` or the cookie `sessionId`';

/**
 * Requires a session (`Authorization: Bearer <id>` or `Cookie: sessionId=<id>`) and sets `ctx.state.username`.
 * Lookups are cached for `cacheMs` (default 2 s), so a revoked session stops working within that bound; expiry is
 * checked on every request. Concurrent requests of a session share one lookup (single flight), and a session in
 * steady use is looked up again in the background before its answer expires (refresh ahead), so its requests never
 * wait for the database. A failed lookup is not remembered.
 */
export function requireSession(models: Models, cacheMs: number): Middleware {
  const authenticate = sessionAuthenticator(models, cacheMs);
  return async (ctx, next) => {
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
