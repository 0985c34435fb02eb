import type { Middleware } from 'koa';
import { Histogram, type Registry } from 'prom-client';

/**
 * Request latency by method, route and status class, as `ptr_http_request_duration_seconds`. The route is the
 * matched pattern (`/api/runs/:user/:profile/:task/:run`), never the path: paths hold user, task and run names, and a
 * label per name would grow without bound. Requests no route matched share `unmatched`. Mounted outside the error
 * handler, so the status is the one the client gets.
 */
export function requestMetrics(registry: Registry): Middleware {
  const duration = new Histogram({
    name: 'ptr_http_request_duration_seconds',
    help: 'Time from a request reaching the API to its answer being ready to send, by matched route.',
    labelNames: ['method', 'route', 'status_class'] as const,
    registers: [registry],
  });
  return async (ctx, next) => {
    const end = duration.startTimer();
    try {
      await next();
    } finally {
      end({ method: ctx.method, route: routeOf(ctx), status_class: `${Math.floor(ctx.status / 100)}xx` });
    }
  };
}

type MatchedLayer = { path: string | RegExp; methods: string[] };

/**
 * The pattern of the route that matched the request, chosen as @koa/router chooses `ctx._matchedRoute` (the last
 * matched layer that is a route), but from `ctx.matched`: `_matchedRoute` is overwritten by each middleware layer
 * that runs, so a request refused by one (a 401 from the session check) would be labelled with that layer's pattern.
 */
export function routeOf(ctx: { method: string }): string {
  const matched = (ctx as { matched?: MatchedLayer[] }).matched ?? [];
  for (let i = matched.length - 1; i >= 0; i--) {
    if (matched[i]!.methods.includes(ctx.method)) return String(matched[i]!.path);
  }
  return 'unmatched';
}
