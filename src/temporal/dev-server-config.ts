/**
 * The dynamic config of every Temporal dev server we start (`npm run dev`, the tests', the bench's). A cluster sets the
 * same in its dynamic config file (deploy/temporal-dynamic-config.yaml; docs/fairness.md).
 */
export const DEV_SERVER_DYNAMIC_CONFIG = {
  // A run's first activity goes to the worker that completed its workflow task, without a trip through matching
  // (which also means it skips fairness: docs/fairness.md).
  'system.enableActivityEagerExecution': true,
  // Task-queue fairness by run owner and priority (src/runs/priority.ts). enableFairness implies the new matcher;
  // both are set so the intent reads in either.
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
} as const;

/** `temporal server start-dev` flags for DEV_SERVER_DYNAMIC_CONFIG. */
export const devServerDynamicConfigFlags = () => Object.entries(DEV_SERVER_DYNAMIC_CONFIG).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${value}`]);
