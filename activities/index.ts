import { createRuns } from '../src/runs';
import type { ActivityDeps } from './deps';
import { withFailurePolicy } from './failure-guard';
import { createEvalActivities } from './evals';
import { createHealthActivities } from './health';
import { createReconcileActivities } from './reconcile';
import { createRetentionActivities } from './retention';
import { createRunActivities } from './run-activities';
import { createScheduledRunActivities } from './scheduled-run';
import { createWebhookDeliveryActivities } from './webhook-delivery';

export type { ActivityDeps };

/** Every activity, built from real dependencies (the worker's, or the tests' pointed at local fakes). */
export function createActivities(deps: ActivityDeps) {
  // The run's lifecycle, built once for this worker process (src/runs/).
  const runs = createRuns({ models: deps.db.models, temporal: deps.temporal, logger: deps.logger, config: deps.config });
  const runSteps = withFailurePolicy(
    deps.logger,
    { prepareStart: 'preparing the run', prepareRun: 'preparing the run', recordRun: 'recording the run', callModel: 'the provider call', firstModelCall: 'the provider call', prepareAndCallModel: 'the provider call', callTool: 'the tool call', callMcpTool: 'the MCP tool call', startMcpTask: 'starting the MCP task', followMcpTask: 'following the MCP task', mcpTaskResult: 'reading the MCP task\'s result', answerMcpTask: 'answering the MCP task\'s questions', cancelMcpTask: 'cancelling the MCP task', abortRunCalls: 'stopping a cancelled run\'s calls', recordedToolResult: 'reading a recorded tool result', reconcileClosedRuns: 'reconciling runs', startDeferredRuns: 'starting deferred runs', deleteExpiredRuns: 'deleting expired runs' },
    {
      ...createHealthActivities(),
      ...createRunActivities(deps, runs),
      ...createReconcileActivities(deps, runs),
      ...createRetentionActivities(deps, runs),
    },
  );
  // A schedule's steps are not a run's: their failures are the schedule action's (seen in Temporal), and "the run is
  // still open" is how its wait polls.
  // A webhook delivery's failures are its own too (activities/webhook-delivery.ts), never a run's.
  // An eval's steps are its own too (activities/evals.ts): its replays are runs with their own failures.
  return { ...runSteps, ...createScheduledRunActivities(deps, runs), ...createWebhookDeliveryActivities(deps), ...createEvalActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
