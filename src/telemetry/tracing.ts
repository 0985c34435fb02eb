import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Config } from '../config';
import { AsyncLocalStorageContextManager } from './context-manager';
import { tracingSettings, type TracedProcess, type TracingSettings } from './settings';

/** A process's tracing, while OTEL_EXPORTER_OTLP_ENDPOINT (or the traces' own) is set. */
export interface Tracing {
  /** The batch processor of every span: the worker hands it the workflows' spans too (their exporter sink). */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Sends what is still batched and stops; a second call does nothing more. */
  shutdown(): Promise<void>;
}

/**
 * Registers the process's tracer provider (global: @opentelemetry/api's tracers, propagation and active context),
 * exporting in batches over OTLP/HTTP. Returns undefined, and registers nothing, when tracing is off: every span
 * made through @opentelemetry/api is then a no-op.
 */
export function startTracing(config: Config, process: TracedProcess): Tracing | undefined {
  const settings = tracingSettings(config, process);
  if (!settings) return undefined;
  const resource = new Resource({ [ATTR_SERVICE_NAME]: settings.serviceName });
  const spanProcessor = new BatchSpanProcessor(otlpExporter(settings));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager(), propagator: new W3CTraceContextPropagator() });
  let stopped: Promise<void> | undefined;
  return {
    spanProcessor,
    resource,
    shutdown: () =>
      (stopped ??= provider.shutdown().finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      })),
  };
}

/** The exporter the protocol names; the URL and headers are given, so the exporter's own reading of OTEL_* adds nothing. */
function otlpExporter(settings: TracingSettings): SpanExporter {
  const options = { url: settings.url, headers: settings.headers };
  if (settings.protocol === 'http/json') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only by the protocol that needs it
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(options);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}
