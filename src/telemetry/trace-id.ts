import { trace } from '@opentelemetry/api';

/**
 * The id of the trace the caller is in (the trigger's request span), when a tracer provider records it; undefined
 * when tracing is off (no provider: no span is ever active) or the span is not sampled.
 */
export function currentTraceId(): string | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}
