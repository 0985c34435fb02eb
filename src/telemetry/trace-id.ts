import { context, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';

/** Where a run's trigger was in its trace: the trace, and the trigger's span (what the run's workflow continues). */
export interface TraceRef {
  traceId: string;
  spanId: string;
}

/**
 * The trace and span the caller is in (the trigger's request span), when a tracer provider records it; undefined
 * when tracing is off (no provider: no span is ever active) or the span is not sampled.
 */
export function currentTrace(): TraceRef | undefined {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}

/** The id of the trace the caller is in, as `currentTrace`. */
export const currentTraceId = (): string | undefined => currentTrace()?.traceId;

/**
 * Runs `work` as a continuation of `ref` (a run's trigger, read back from its record), whoever calls it: a run started
 * later (its owner's admission turn, the reconciler) has its workflow in its trigger's trace. Without `ref`, or with
 * tracing off, `work` runs as it is.
 */
export function inTrace<T>(ref: TraceRef | undefined, work: () => T): T {
  if (!ref) return work();
  const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: ref.traceId, spanId: ref.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
  return context.with(parent, work);
}
