import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry/lib/worker';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReplayWorkerOptions, WorkflowBundleWithSourceMap } from '@temporalio/worker';

/**
 * Options of a replay worker as a service worker has them: `traced`, with the sink the OpenTelemetry workflow
 * interceptors export through (src/temporal/worker.ts; a replay sends nothing to it).
 */
export function replayOptions(workflowBundle: WorkflowBundleWithSourceMap, traced: boolean): ReplayWorkerOptions {
  if (!traced) return { workflowBundle };
  const sink = makeWorkflowExporter(new SimpleSpanProcessor(new InMemorySpanExporter()), new Resource({ 'service.name': 'replay' }));
  return { workflowBundle, sinks: { exporter: sink } };
}
