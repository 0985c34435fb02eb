import type { Middleware } from 'koa';
import { unauthorized } from '../../errors';
import type { Models } from '../../store/models';
import { findSession, type SessionLookup } from '../../store/sessions';
import { createTtlCache } from '../../ttl-cache';

/**
 * Requires `Cookie: sessionId=<id>` and sets `ctx.state.username`. Lookups are cached for `cacheMs` (default 2 s), so
 * a revoked session stops working within that bound; expiry is checked on every request. Concurrent requests of a
 * session share one lookup (single flight), and a session in steady use is looked up again in the background before
 * its answer expires (refresh ahead), so its requests never wait for the database. A failed lookup is not remembered.
 */
export function requireSession(models: Models, cacheMs: number): Middleware {
  const cache = createTtlCache<SessionLookup | null>(cacheMs, { refreshAhead: true });
  return async (ctx, next) => {
    const id = ctx.cookies.get('sessionId');
    if (!id) throw unauthorized();
    const session = await cache.get(id, () => findSession(models, id, Date.now()));
    if (!session || session.expiresAt <= Date.now()) throw unauthorized('session is unknown, expired or revoked');
    ctx.state.username = session.username;
    return next();
  };
}
