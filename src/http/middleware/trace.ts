import type { Middleware } from 'koa';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_URL_SCHEME } from '@opentelemetry/semantic-conventions';
import { routeOf } from './metrics';

/**
 * A server span per request (mounted only while tracing is on), named `<method> <route>` by the matched pattern,
 * never the path: paths hold user, task and run names and signed URLs their signatures, so neither the path nor the
 * query is in any attribute. A `traceparent` the client sent is continued. Outermost, so the status is the client's.
 */
export function traceRequests(): Middleware {
  const tracer = trace.getTracer('prompt-task-runner');
  return async (ctx, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: ctx.method, [ATTR_URL_SCHEME]: ctx.protocol } }, parent);
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = routeOf(ctx);
      span.updateName(`${ctx.method} ${route}`);
      span.setAttributes({ [ATTR_HTTP_ROUTE]: route, [ATTR_HTTP_RESPONSE_STATUS_CODE]: ctx.status });
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
