import type { Config } from '../config';

/** Which process exports: its default `service.name` says so. */
export type TracedProcess = 'api' | 'worker';

/** Where and how a process exports its spans; undefined when tracing is off. */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL (`.../v1/traces`). */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  serviceName: string;
}

type OtelSettings = Pick<
  Config,
  'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_PROTOCOL' | 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' | 'OTEL_EXPORTER_OTLP_HEADERS' | 'OTEL_SERVICE_NAME'
>;

/**
 * The OTLP exporter's settings as the OpenTelemetry specification reads the `OTEL_*` variables: the traces' own
 * endpoint as it is, else the general one with `/v1/traces` appended; the traces' own protocol over the general one.
 */
export function tracingSettings(config: OtelSettings, process: TracedProcess): TracingSettings | undefined {
  const url = config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (config.OTEL_EXPORTER_OTLP_ENDPOINT && `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`);
  if (!url) return undefined;
  return {
    url,
    protocol: config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: config.OTEL_EXPORTER_OTLP_HEADERS,
    serviceName: config.OTEL_SERVICE_NAME ?? `prompt-task-runner-${process}`,
  };
}
