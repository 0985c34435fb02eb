/**
 * Not a workflow: the workflow interceptor module of a tracing worker's bundle (src/temporal/worker.ts), in the
 * workflow sandbox. The SDK's OpenTelemetry interceptors, engaged only for a workflow whose start carried a trace
 * context (the header the SDK's client interceptor adds): a workflow started without one, a run started before
 * tracing was turned on among them, runs exactly as the bundle without them ran it. (The SDK's interceptors add awaits
 * to a history that lacks their flags, which moves a run's handlers against its steps: approvals recorded untraced
 * failed to replay under them.) The decision is the start's header, the same on every replay.
 * Queries are never traced: a live run is read by query on every poll, and each would be a span.
 */
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors, WorkflowInternalsInterceptor, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

export const interceptors = (): WorkflowInterceptors => {
  let otel: { inbound: OpenTelemetryInboundInterceptor; outbound: OpenTelemetryOutboundInterceptor; internals: OpenTelemetryInternalsInterceptor } | undefined;
  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      if (input.headers[TRACE_HEADER]) otel = { inbound: new OpenTelemetryInboundInterceptor(), outbound: new OpenTelemetryOutboundInterceptor(), internals: new OpenTelemetryInternalsInterceptor() };
      return otel ? otel.inbound.execute(input, next) : next(input);
    },
    handleSignal: (input, next) => (otel ? otel.inbound.handleSignal(input, next) : next(input)),
    handleUpdate: (input, next) => (otel ? otel.inbound.handleUpdate(input, next) : next(input)),
    validateUpdate: (input, next) => (otel ? otel.inbound.validateUpdate(input, next) : next(input)),
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => (otel ? otel.outbound.scheduleActivity(input, next) : next(input)),
    scheduleLocalActivity: (input, next) => (otel ? otel.outbound.scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (input, next) => (otel ? otel.outbound.startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input, next) => (otel ? otel.outbound.continueAsNew(input, next) : next(input)),
    signalWorkflow: (input, next) => (otel ? otel.outbound.signalWorkflow(input, next) : next(input)),
    startNexusOperation: (input, next) => (otel ? otel.outbound.startNexusOperation(input, next) : next(input)),
    getLogAttributes: (input, next) => (otel ? otel.outbound.getLogAttributes(input, next) : next(input)),
    getMetricTags: (input, next) => (otel ? otel.outbound.getMetricTags(input, next) : next(input)),
  };
  const internals: WorkflowInternalsInterceptor = {
    dispose: (input, next) => (otel ? otel.internals.dispose(input, next) : next(input)),
  };
  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
