import type { Context } from 'koa';
import fresh from 'fresh';

/**
 * Whether the request's If-None-Match matches the ETag set on the answer (a list of tags or `*`, compared weakly),
 * by the `fresh` package Koa's `ctx.fresh` uses, without that getter's end-to-end reload rule: `fetch()` sends
 * `Cache-Control: no-cache` with every conditional request (the Fetch standard adds it), and `ctx.fresh` would answer
 * all of them in full.
 */
export function etagFresh(ctx: Context): boolean {
  const ifNoneMatch = ctx.get('if-none-match');
  return ifNoneMatch !== '' && fresh({ 'if-none-match': ifNoneMatch }, { etag: ctx.response.get('etag') });
}
