import { ActivityCancellationType } from '@temporalio/workflow';

/**
 * Activity timeouts, in one place. Remote calls are also cut to what is left of the run's time limit (run-task.ts). Retries of provider calls happen in the workflow (so the run can show `pending`
 * while it waits), hence every remote activity has a single attempt; local bookkeeping retries until it lands.
 */
/**
 * A cancelled run waits for its local write in flight to end (WAIT_CANCELLATION_COMPLETED) before it records `error`:
 * abandoned (Temporal's default), the write would land after the end and leave the record `running` for ever.
 */
const AWAIT_WRITE = { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } as const;
/** Prepare reads the task and writes the record: retried through a database stall of minutes, not a template's fault. */
export const PREPARE = { ...AWAIT_WRITE, startToCloseTimeout: '30s', scheduleToCloseTimeout: '5m', retry: { initialInterval: '500ms', maximumInterval: '10s' } } as const;
/** A record write must eventually land: the record is what serves closed runs. */
export const RECORD = { ...AWAIT_WRITE, startToCloseTimeout: '30s', retry: { initialInterval: '200ms', maximumInterval: '10s' } } as const;
/** A replay's recorded tool result is read from the store (a lookup by _id): retried through a stall, as a record write is. */
export const RECORDED_RESULT = { startToCloseTimeout: '30s', retry: { initialInterval: '200ms', maximumInterval: '10s' } } as const;
/** The provider call heartbeats; a dead worker's call is retried by the workflow after the heartbeat timeout. */
export const providerCall = (heartbeatMs: number, timeoutMs: number) =>
  ({ startToCloseTimeout: timeoutMs, heartbeatTimeout: heartbeatMs, retry: { maximumAttempts: 1 } }) as const;
/** Servlet calls have their own time limit inside the host; this bound only catches a lost worker. */
export const TOOL_CALL = { startToCloseTimeout: 5 * 60_000, heartbeatTimeout: '30s', retry: { maximumAttempts: 2 } } as const;
/**
 * MCP tool calls bound themselves (MCP_CALL_TIMEOUT_MS, tries of a server not reached) and heartbeat while they wait,
 * as provider calls do (PROVIDER_HEARTBEAT_TIMEOUT_MS); a lost worker's call is attempted again, and that attempt
 * decides whether the tool may run again (activities/mcp-call.ts). A call whose server asks a person something waits
 * for the answer (up to INPUT_TIMEOUT_S, `inputWaitMs`) on top of its own 15 minutes; the run's time left bounds both.
 */
export const mcpCall = (heartbeatMs: number, inputWaitMs = 0) =>
  ({ startToCloseTimeout: 15 * 60_000 + inputWaitMs, heartbeatTimeout: heartbeatMs, retry: { initialInterval: '1s', maximumAttempts: 3 } }) as const;
/** One pass of the reconciler: a page of visibility results at a time, heartbeating; a failed pass waits for the next. */
export const RECONCILE = { startToCloseTimeout: '5m', heartbeatTimeout: '30s', retry: { maximumAttempts: 2 } } as const;
/** Stopping a cancelled run's calls in flight in this worker: a map lookup, tried once (Temporal's cancel is the fallback). */
export const ABORT = { startToCloseTimeout: '10s', retry: { maximumAttempts: 1 } } as const;
/** One batch of the retention pass: three collection scans on FerretDB, so minutes are allowed; a failed batch waits for the next pass. */
export const RETAIN = { startToCloseTimeout: '10m', retry: { maximumAttempts: 2 } } as const;
/**
 * A provider call refused because its owner's calls on the worker are at their cap (`OwnerBusy`) is made again after
 * this wait, doubling from 1 s to 16 s, ±25 % so the waiting runs of one owner do not call again together. The waits
 * cost one failed activity and one timer each (run-steps.ts `askModel`); the longest bounds both their number and how
 * long a freed slot may stay unused.
 */
export const ownerBusyWait = (waits: number) => Math.min(16_000, 1_000 * 2 ** waits) * (0.75 + Math.random() / 2);
/** An eval's bookkeeping (activities/evals.ts: start a replay, score, end): retried through a database stall. */
export const EVAL_STEP = { startToCloseTimeout: '30s', retry: { initialInterval: '1s', maximumInterval: '30s' } } as const;
/**
 * An eval waiting for one replay: one short look per attempt, each "still going" a benign retry (no history written per
 * look, no activity slot held), looking less often the longer the replay takes.
 */
export const EVAL_AWAIT = { startToCloseTimeout: '10s', retry: { initialInterval: '500ms', backoffCoefficient: 1.5, maximumInterval: '5s' } } as const;
