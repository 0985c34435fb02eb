import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Logger } from '../src/logger';
import { FAILURES, internalReason, runFailure } from '../src/contract/failures';

type ActivityFn = (...args: any[]) => Promise<unknown>;

/**
 * Applies the failure policy (src/contract/failures.ts) to every activity: a listed failure or a cancellation passes
 * as it is; anything else is logged with its details and reaches the workflow as an `Internal` failure whose
 * message says only which step it stopped (a database error must not reach the run's reader word for word).
 * `steps` names each activity's step as a run's reader would say it.
 */
export function withFailurePolicy<T extends Record<string, ActivityFn>>(logger: Logger, steps: NoInfer<Partial<Record<keyof T, string>>>, activities: T): T {
  const guarded: Record<string, ActivityFn> = {};
  for (const [name, activity] of Object.entries(activities)) {
    guarded[name] = async (...args: unknown[]) => {
      try {
        return await activity(...args);
      } catch (err) {
        if (err instanceof CancelledFailure) throw err;
        if (err instanceof ApplicationFailure && err.type && Object.prototype.hasOwnProperty.call(FAILURES, err.type)) throw err;
        logger.error({ err, activity: name }, 'activity failed');
        throw runFailure('Internal', internalReason(steps[name as keyof T] ?? name));
      }
    };
  }
  return guarded as T;
}
