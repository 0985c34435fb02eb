import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../logger';

let installed = false;

/**
 * Said once by every activity-only worker (the tool calls' worker, src/temporal/worker.ts has two by design): a
 * warning only when a worker was meant to run workflows, so it is logged at debug.
 */
const EXPECTED_WARNINGS = new Set(['No workflows registered, not polling for workflow tasks']);

/** Routes the Temporal SDK's own logs (worker state, retries) into our structured logger, once per process. */
export function installTemporalRuntime(logger: Logger, level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      const level = entry.level === 'WARN' && EXPECTED_WARNINGS.has(entry.message) ? 'DEBUG' : entry.level;
      const method = level === 'ERROR' ? 'error' : level === 'WARN' ? 'warn' : level === 'INFO' ? 'info' : 'debug';
      sdkLogger[method](entry.meta ?? {}, entry.message);
    }),
  });
}
