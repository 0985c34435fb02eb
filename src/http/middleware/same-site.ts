import type { Middleware } from 'koa';
import { forbidden } from '../../errors';

/** The paths whose routes take the session cookie (case-insensitive, as @koa/router matches them). */
const COOKIE_PATHS = /^\/api(?:\/|$)/i;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** A Bearer credential: a page on another site cannot send one it does not know, unlike the cookie. */
const BEARER = /^Bearer[ \t]+\S/i;

/**
 * Refuses, with 403 `cross_site_request`, a state-changing request under `/api` that a browser may have sent from
 * another site with the user's cookie: one without a Bearer credential (so the cookie authenticates it, or it is
 * `POST /api/sign-in`) that carries `Sec-Fetch-Site: cross-site`, or an `Origin` other than the API's own (PUBLIC_URL's,
 * or the request's own scheme and Host). Browsers send `Origin` with every POST, PUT, PATCH and DELETE; requests with
 * neither header (curl, the Python client, ptr) and Bearer requests pass as before. Runs before the body is read.
 */
export function refuseCrossSite(publicUrl: string): Middleware {
  const own = new URL(publicUrl).origin;
  return async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method) && COOKIE_PATHS.test(ctx.path) && !BEARER.test(ctx.get('authorization'))) {
      if (ctx.get('sec-fetch-site').toLowerCase() === 'cross-site') {
        throw forbidden('sec-fetch-site: the browser says this request comes from another site; it is refused (docs/console.md)', 'cross_site_request');
      }
      const origin = ctx.get('origin');
      // Not `ctx.origin`: Koa 3 answers the Origin header there.
      if (origin && origin !== own && origin !== `${ctx.protocol}://${ctx.host}`) {
        throw forbidden(`origin: ${origin.slice(0, 200)} is not this API's (${own}); a request from another site is refused (docs/console.md)`, 'cross_site_request');
      }
    }
    await next();
  };
}
