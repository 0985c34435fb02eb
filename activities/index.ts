import type { ActivityDeps } from './deps';
import { withFailurePolicy } from './failure-guard';
import { createReconcileActivities } from './reconcile';
import { createRetentionActivities } from './retention';
import { createRunActivities } from './run-activities';

export type { ActivityDeps };

/** Every activity, built from real dependencies (the worker's, or the tests' pointed at local fakes). */
export function createActivities(deps: ActivityDeps) {
  return withFailurePolicy(
    deps.logger,
    { prepareRun: 'preparing the run', recordRun: 'recording the run', callModel: 'the provider call', callTool: 'the tool call', abortRunCalls: 'stopping a cancelled run\'s calls', reconcileClosedRuns: 'reconciling runs', startDeferredRuns: 'starting deferred runs', deleteExpiredRuns: 'deleting expired runs' },
    {
      async echo(input: { text: string }): Promise<string> {
        return input.text;
      },
      ...createRunActivities(deps),
      ...createReconcileActivities(deps),
      ...createRetentionActivities(deps),
    },
  );
}

export type Activities = ReturnType<typeof createActivities>;
