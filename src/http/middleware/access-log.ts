import type { Middleware } from 'koa';
import type { Logger } from '../../logger';

/** One line per request. Logs the path without the query string: signed URLs carry their credential there. */
export function accessLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      logger.debug({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - start) }, 'request');
    }
  };
}
