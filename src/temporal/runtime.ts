import { DefaultLogger, Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from '../logger';

let installed = false;

/**
 * Said once by every activity-only worker (the tool calls' worker, src/temporal/worker.ts has two by design): a
 * warning only when a worker was meant to run workflows, so it is logged at debug.
 */
const EXPECTED_WARNINGS = new Set(['No workflows registered, not polling for workflow tasks']);

/**
 * What an operator reads in an SDK entry; the rest (task tokens, run ids, the queue) is noise in every line. `trace_id`:
 * a tracing worker's entries of traced runs have it (the SDK's OpenTelemetry interceptors add it).
 */
const KEPT = ['activityType', 'workflowId', 'attempt', 'durationMs', 'workflowType', 'trace_id'] as const;

/**
 * An SDK entry's metadata as a short log object: the attributes an operator reads, and an error as one line
 * (`<failure type>: <message>`) rather than the whole failure with its stack. Entries without an activity or a
 * workflow (worker state) keep their metadata.
 */
export function sdkLogFields(meta: LogMetadata | undefined): Record<string, unknown> {
  if (!meta) return {};
  if (!('activityType' in meta) && !('workflowId' in meta)) {
    const { taskToken: _taskToken, task_token: _token, ...rest } = meta;
    return { ...rest, ...errorField(meta.error) };
  }
  const out: Record<string, unknown> = {};
  for (const key of KEPT) if (meta[key] !== undefined) out[key] = meta[key];
  return { ...out, ...errorField(meta.error) };
}

function errorField(error: unknown): { error?: string } {
  if (!(error instanceof Error)) return error === undefined ? {} : { error: String(error) };
  const type = (error as { type?: unknown }).type;
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : '';
  return { error: `${typeof type === 'string' && type ? type : error.name}: ${error.message}${cause}` };
}

/**
 * Routes the Temporal SDK's own logs (worker state, retries), the native core's included (it would print to stderr
 * in a format of its own), into our structured logger, once per process.
 */
export function installTemporalRuntime(logger: Logger, level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    telemetryOptions: { logging: { filter: { core: level, other: level }, forward: {} } },
    logger: new DefaultLogger(level, (entry) => {
      const level = entry.level === 'WARN' && EXPECTED_WARNINGS.has(entry.message) ? 'DEBUG' : entry.level;
      const method = level === 'ERROR' ? 'error' : level === 'WARN' ? 'warn' : level === 'INFO' ? 'info' : 'debug';
      sdkLogger[method](sdkLogFields(entry.meta), entry.message);
    }),
  });
}
