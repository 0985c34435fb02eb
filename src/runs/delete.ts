import { status as grpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import { deleteRunContent } from '../store/run-content';
import { deleteMcpTasksOfRuns } from '../store/mcp-tasks';
import { deleteRunRecord, findRun, type RunToDelete } from '../store/runs';
import { isTerminal } from '../contract/constants';

type DeleteDeps = { models: Models; temporal: Client; logger: Logger; config: Pick<Config, 'SIGNING_SECRET'> };

export type { RunToDelete };

/**
 * Deletes closed runs for good. Each is read again by `_id` first (FerretDB's one lookup without a scan: a filter with
 * more fields than `_id` makes it scan the collection) and kept only while it is the same run (not a later one of the
 * name), closed and, with `modifiedBefore`, last changed before it. Then their MCP task handles (by `_id`) and what
 * they stored (pages, large texts), then their workflow executions in Temporal (best effort), and last the records:
 * while a record is there its name is taken, so no trigger can start a new run whose contents, handle or execution
 * this would delete, and a delete cut short leaves records a retry finds again. Returns the ids it deleted. Pages and texts are found by their `run` field,
 * which FerretDB scans for: one scan of each collection per call.
 */
export async function deleteClosedRuns(deps: DeleteDeps, runs: RunToDelete[], options: { modifiedBefore?: Date } = {}): Promise<string[]> {
  const current = await Promise.all(runs.map((run) => findRun(deps.models, run._id)));
  const doomed = current
    .filter((record, i) => record && isTerminal(record.status) && record.created_at.getTime() === runs[i]!.created_at.getTime())
    .filter((record) => !options.modifiedBefore || record!.modified_at < options.modifiedBefore)
    .map((record) => record!);
  if (doomed.length === 0) return [];
  const ids = doomed.map((record) => record._id);
  await deleteMcpTasksOfRuns(deps.models, deps.config.SIGNING_SECRET, doomed);
  await deleteRunContent(deps.models, ids);
  await Promise.all(ids.map((id) => deleteRunExecution(deps, id)));
  for (const id of ids) await deleteRunRecord(deps.models, id);
  return ids;
}

/**
 * Deletes a closed run's workflow execution from Temporal (its latest; earlier executions of a continued-as-new run
 * go at Temporal's retention), so the name starts afresh in the Web UI too. Best effort: a failure is logged, and a
 * later run of the name starts all the same (runs/trigger.ts tells an earlier run's execution from its own).
 */
async function deleteRunExecution(deps: DeleteDeps, workflowId: string): Promise<void> {
  try {
    await deps.temporal.workflowService.deleteWorkflowExecution({ namespace: deps.temporal.options.namespace, workflowExecution: { workflowId } });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === grpcStatus.NOT_FOUND) return; // past Temporal's retention already
    deps.logger.warn({ run: workflowId, err }, 'run deleted, but Temporal did not delete its workflow execution');
  }
}
