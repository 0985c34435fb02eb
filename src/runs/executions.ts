import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import type { RunRecord } from '../store/runs';

/**
 * Which run record a workflow execution ran. A deleted run frees its name, and a run triggered later under it has the
 * same workflow id, so Temporal may still hold an earlier run's closed execution under the id of a new record. The
 * start memo `recordCreatedAt` (the record's `created_at`, ms) tells them apart; executions started before it was
 * written are told by time: one that closed before the record was created cannot be its run.
 */
export const RECORD_CREATED_MEMO = 'recordCreatedAt';

export type ExecutionFacts = Pick<WorkflowExecutionInfo, 'memo' | 'closeTime'>;

/** true when `execution` ran an earlier record of the run's name, not `record`. */
export function ranEarlierRecord(record: Pick<RunRecord, 'created_at'>, execution: ExecutionFacts): boolean {
  const created = execution.memo?.[RECORD_CREATED_MEMO];
  if (typeof created === 'number') return created !== record.created_at.getTime();
  return execution.closeTime !== undefined && execution.closeTime.getTime() < record.created_at.getTime();
}

/**
 * The latest execution under the run's workflow id as `describe` tells it, or null when Temporal has none (never
 * started, deleted, or past its retention). Throws when Temporal does not answer.
 */
export async function describeRunExecution(client: Client, workflowId: string): Promise<(ExecutionFacts & { running: boolean; runId: string }) | null> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return { memo: description.memo, closeTime: description.closeTime, running: description.status.name === 'RUNNING', runId: description.runId };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}
