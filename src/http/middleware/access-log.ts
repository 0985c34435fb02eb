import type { Middleware } from 'koa';
import type { Logger } from '../../logger';
import { currentTraceId } from '../../telemetry/trace-id';

/**
 * One line per request, and the time spent in the service as a `Server-Timing: app;dur=<ms>` header (clients and the
 * benchmark tell server time from network and client time with it). Logs the path without the query string: signed
 * URLs carry their credential there. While the API traces, the line has the request's `trace_id` (its span's trace).
 */
export function accessLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      const ms = performance.now() - start;
      ctx.set('Server-Timing', `app;dur=${ms.toFixed(1)}`);
      const traceId = currentTraceId();
      logger.debug({ method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms), ...(traceId ? { trace_id: traceId } : {}) }, 'request');
    }
  };
}
