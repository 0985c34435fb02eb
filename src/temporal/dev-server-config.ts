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

/**
 * The SQLite settings of a dev server that keeps its data in a file (`npm run dev`, the bench, the tests' restartable
 * server). The server's defaults are SQLite's: a rollback journal, and a commit that waits for the disk twice; with a
 * write-ahead log and `synchronous=normal` a commit appends to the log and waits for nothing, readers do not block the
 * writer, and a crash of any process loses nothing (a power loss may lose the last moments' commits, never the file),
 * as FerretDB's settings in src/cli/dev-processes.ts. `busy_timeout` lets a connection wait for the writer's lock
 * rather than fail at once.
 */
export const DEV_SERVER_SQLITE_PRAGMAS = {
  journal_mode: 'wal',
  synchronous: 'normal',
  busy_timeout: '10000',
} as const;

/** `temporal server start-dev` flags for DEV_SERVER_SQLITE_PRAGMAS (only with `--db-filename`). */
export const devServerSqliteFlags = () => Object.entries(DEV_SERVER_SQLITE_PRAGMAS).flatMap(([key, value]) => ['--sqlite-pragma', `${key}=${value}`]);
