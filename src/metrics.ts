import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics. Node's process metrics (CPU, resident memory, heap, event loop lag, GC, handles) are collected
 * once per process, in one registry; each component (an API, a worker) keeps its own metrics in a registry of its
 * own, so two in one process (the tests run several) never count into each other, and `/metrics` serves both.
 */

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** A component's registry; pass it as `registers: [registry]` to the metrics it owns. */
export function createRegistry(): Registry {
  // Started with the component, so the process metrics (event loop lag in particular) measure from its start.
  processMetrics();
  return new Registry();
}

/** The Prometheus text of the process metrics and the component's own, with its content type. */
export async function exposition(component: Registry): Promise<{ contentType: string; text: string }> {
  const merged = Registry.merge([processMetrics(), component]);
  return { contentType: merged.contentType, text: await merged.metrics() };
}
