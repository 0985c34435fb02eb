import type { Middleware } from 'koa';
import { unauthorized } from '../../errors';
import type { Models } from '../../store/models';
import { findSession, type SessionLookup } from '../../store/sessions';

/**
 * Requires `Cookie: sessionId=<id>` and sets `ctx.state.username`. Lookups are cached for `cacheMs` (default 2 s),
 * so a revoked session stops working within that bound; expiry is checked on every request.
 */
export function requireSession(models: Models, cacheMs: number): Middleware {
  const cache = new Map<string, { value: SessionLookup | null; at: number }>();
  return async (ctx, next) => {
    const id = ctx.cookies.get('sessionId');
    if (!id) throw unauthorized();
    const now = Date.now();
    let hit = cache.get(id);
    if (!hit || now - hit.at >= cacheMs) {
      hit = { value: await findSession(models, id, now), at: now };
      if (cacheMs > 0) {
        if (cache.size > 10_000) cache.clear();
        cache.set(id, hit);
      }
    }
    if (!hit.value || hit.value.expiresAt <= now) throw unauthorized('session is unknown, expired or revoked');
    ctx.state.username = hit.value.username;
    return next();
  };
}
