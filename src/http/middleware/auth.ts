import type { Middleware } from 'koa';
import { unauthorized } from '../../errors';
import type { Models } from '../../store/models';
import { findSession, type SessionLookup } from '../../store/sessions';

/**
 * Requires `Cookie: sessionId=<id>` and sets `ctx.state.username`. Lookups are cached for `cacheMs` (default 2 s),
 * so a revoked session stops working within that bound; expiry is checked on every request. Concurrent requests
 * with one session share one lookup (single flight), so a cache expiry under many pollers costs one database read.
 */
export function requireSession(models: Models, cacheMs: number): Middleware {
  const cache = new Map<string, { value: Promise<SessionLookup | null>; at: number }>();
  return async (ctx, next) => {
    const id = ctx.cookies.get('sessionId');
    if (!id) throw unauthorized();
    const now = Date.now();
    let hit = cache.get(id);
    if (!hit || now - hit.at >= cacheMs) {
      hit = { value: Promise.resolve(findSession(models, id, now)), at: now };
      const entry = hit;
      if (cacheMs > 0) {
        if (cache.size > 10_000) cache.clear();
        cache.set(id, entry);
        // A failed lookup (database down) is not remembered: the next request tries again.
        entry.value.catch(() => cache.get(id) === entry && cache.delete(id));
      }
    }
    const session = await hit.value;
    if (!session || session.expiresAt <= Date.now()) throw unauthorized('session is unknown, expired or revoked');
    ctx.state.username = session.username;
    return next();
  };
}
