import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { recordOutsideEnd } from './recorder';
import { entryCount, findRun } from '../store/runs';
import { runQuery } from '../contract/messages';
import { isTerminal } from '../contract/constants';
import type { HeldEntry } from '../contract/types';
import { describeRunExecution, ranEarlierRecord, type ExecutionFacts } from './executions';
import { announceRunClosed, type AnnounceDeps } from './announce';

const Status = temporal.api.enums.v1.WorkflowExecutionStatus;

/** A closed workflow's status, as visibility queries and `describe` name it. */
export type ClosedStatus = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'TERMINATED' | 'TIMED_OUT' | 'CONTINUED_AS_NEW';

/** The status of a QueryRejectedError (the proto's number), by name. */
export function closedStatusName(status: number): ClosedStatus | undefined {
  switch (status) {
    case Status.WORKFLOW_EXECUTION_STATUS_COMPLETED: return 'COMPLETED';
    case Status.WORKFLOW_EXECUTION_STATUS_FAILED: return 'FAILED';
    case Status.WORKFLOW_EXECUTION_STATUS_CANCELED: return 'CANCELLED';
    case Status.WORKFLOW_EXECUTION_STATUS_TERMINATED: return 'TERMINATED';
    case Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT: return 'TIMED_OUT';
    case Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: return 'CONTINUED_AS_NEW';
    default: return undefined;
  }
}

/** The reason a run shows when its workflow is gone from Temporal (history deleted, or past retention). */
export const GONE_REASON = 'the run\'s workflow no longer exists in Temporal (its history was deleted), so the run cannot finish';

/**
 * Why a workflow that closed without writing its run's end ended, as the run's reader should read it: an
 * operator's termination with the operator's reason (`terminated: <reason>`), a time-out, a failure, a cancellation.
 */
export async function endingReason(client: Client, workflowId: string, status: ClosedStatus): Promise<string> {
  switch (status) {
    case 'TERMINATED': {
      const reason = await terminationReason(client, workflowId).catch(() => undefined);
      return `terminated: ${reason || '(no reason given)'}`;
    }
    case 'TIMED_OUT':
      return 'the run\'s workflow timed out in Temporal before the run could end';
    case 'CANCELLED':
      return 'the run was cancelled';
    case 'FAILED':
      return 'the run\'s workflow failed in Temporal; the worker\'s log has the details';
    default:
      return `the run's workflow closed (${status.toLowerCase()}) without recording its end`;
  }
}

/** The reason given to `terminate` (the last event of the history; one event read, not the whole history). */
async function terminationReason(client: Client, workflowId: string): Promise<string | undefined> {
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 1,
  });
  return history?.events?.[0]?.workflowExecutionTerminatedEventAttributes?.reason ?? undefined;
}

/**
 * Ends a run's record with `reason` (its last entry; status `error`) when no workflow will write its end (gone from
 * Temporal, never started), and announces the close (runs/announce.ts): the one way to end a run outside its
 * workflow, so no caller can forget the announcement. Returns whether the record was changed (false when it was
 * closed already, or is gone).
 */
export async function closeAndAnnounce(deps: AnnounceDeps, runId: string, reason: string, known?: readonly HeldEntry[]): Promise<boolean> {
  if (!(await recordOutsideEnd(deps.models, runId, reason, known)).written) return false;
  deps.logger.warn({ run: runId, reason }, 'run ended without its workflow writing its end');
  await announceRunClosed(deps, runId);
  return true;
}

/** Pages of a closed workflow's entries read at most (each a replay; a page is up to the query's byte bound). */
const HELD_QUERY_PAGES = 10;

/**
 * The entries a closed workflow held from entry `from` on (those its record lacks: a tool call it had not written
 * when an operator terminated it), by querying it: Temporal replays a closed workflow on a worker to answer. None
 * when no worker answers within `timeoutMs` (DEPENDENCY_TIMEOUT_MS, for all pages together) or the replay fails: the
 * run then ends with what its record has (and the pages read, if any).
 */
async function heldEntries(client: Client, runId: string, execution: string | undefined, from: number, timeoutMs: number): Promise<{ from: number; entries: HeldEntry[] }> {
  const entries: HeldEntry[] = [];
  // One deadline for every page: a slow replay adds no wait to the caller's (a cancel's answer, a reconciler's pass).
  const deadline = Date.now() + timeoutMs;
  try {
    const handle = client.workflow.getHandle(runId, execution);
    for (let page = 0; page < HELD_QUERY_PAGES; page++) {
      const at = from + entries.length;
      const snapshot = await client.withDeadline(deadline, () => handle.query(runQuery, { from: at }));
      // The workflow holds what it has not written, so it starts where the record ends; anything else is not placed.
      if (snapshot.from !== at) break;
      entries.push(...snapshot.entries);
      if (snapshot.entries.length === 0 || at + snapshot.entries.length >= snapshot.total) break;
    }
  } catch {
    // no worker answered, or the replay failed: what was read so far (possibly nothing) is kept
  }
  return { from, entries };
}

/**
 * Ends the record of a run whose workflow closed with `status` without writing its end, and announces the close.
 * Returns whether the record was changed (false when it was closed already, or the workflow ran an earlier run of the same name, deleted since (runs/executions.ts), or the
 * name's latest execution is running: a later one than the closed workflow). `execution`: what a visibility listing
 * or a `describe` said of it; without it, the workflow is described (this path is rare: only workflows that did not
 * complete). `known`: the run's entries as this process read them; without them, the closed workflow is asked what it
 * held (heldEntries), so the record keeps what any reader of the live run may have seen.
 */
export async function closeFromWorkflow(
  deps: AnnounceDeps,
  runId: string,
  status: ClosedStatus,
  execution?: ExecutionFacts & { running?: boolean; runId?: string },
  known?: readonly HeldEntry[],
): Promise<boolean> {
  // A workflow that completed wrote its end first; its record open now is a late write of a step the workflow had
  // stopped waiting for (a local activity cut by a cancel or a stalled store): it is ended too.
  if (status === 'CONTINUED_AS_NEW') return false;
  const record = await findRun(deps.models, runId);
  if (!record || isTerminal(record.status)) return false;
  // When Temporal cannot be asked, the closed workflow is taken to be the record's own.
  const ran = execution ?? (await describeRunExecution(deps.temporal, runId).catch(() => null));
  if (ran?.running || (ran && ranEarlierRecord(record, ran))) return false;
  const reason = await endingReason(deps.temporal, runId, status);
  // Without what this process read of it, the closed workflow says what it held (a tool call it had not written).
  const held = known ? { from: 0, entries: known } : await heldEntries(deps.temporal, runId, ran?.runId, entryCount(record), deps.config.DEPENDENCY_TIMEOUT_MS);
  if (!(await recordOutsideEnd(deps.models, runId, reason, held.entries, held.from)).written) return false;
  deps.logger.warn({ run: runId, status, reason }, 'run ended by its workflow closing without its final record');
  await announceRunClosed(deps, runId);
  return true;
}
