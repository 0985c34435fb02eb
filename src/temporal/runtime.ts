import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../logger';

let installed = false;

/** Routes the Temporal SDK's own logs (worker state, retries) into our structured logger, once per process. */
export function installTemporalRuntime(logger: Logger, level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : entry.level === 'INFO' ? 'info' : 'debug';
      sdkLogger[method](entry.meta ?? {}, entry.message);
    }),
  });
}
