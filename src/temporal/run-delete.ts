import { status as grpcStatus } from '@grpc/grpc-js';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import type { Logger } from '../logger';
import { retryWhileBusy } from '../store/connect';
import type { Models } from '../store/models';
import { deleteRunContent } from '../store/run-content';
import { TERMINAL } from '../../workflows/constants';

type DeleteDeps = { models: Models; temporal: Client; logger: Logger };

/**
 * Deletes closed runs for good, by record `_id` (= workflow id): what they stored (pages, large texts) first, then each
 * record that is still closed (and, with `modifiedBefore`, still last changed before it), then each one's workflow
 * execution in Temporal, best effort. Contents go first so that a failure half-way leaves records a retry finds again,
 * and no trigger can take a name back before its contents are gone. Returns the ids whose records it deleted.
 * Pages and texts are found by their `run` field, which FerretDB scans for: one scan of each collection per call.
 */
export async function deleteClosedRuns(deps: DeleteDeps, ids: string[], options: { modifiedBefore?: Date } = {}): Promise<string[]> {
  if (ids.length === 0) return [];
  await deleteRunContent(deps.models, ids);
  const deleted: string[] = [];
  for (const id of ids) {
    // By _id one at a time: the filter FerretDB looks up without a scan; the rest of it is checked on that document.
    const filter = { _id: id, status: { $in: TERMINAL }, ...(options.modifiedBefore ? { modified_at: { $lt: options.modifiedBefore } } : {}) };
    const result = await retryWhileBusy(() => deps.models.Run.collection.deleteOne(filter as never));
    if (result.deletedCount > 0) deleted.push(id);
  }
  await Promise.all(deleted.map((id) => deleteRunExecution(deps, id)));
  return deleted;
}

/**
 * Deletes a closed run's workflow execution from Temporal (its latest; earlier executions of a continued-as-new run
 * go at Temporal's retention), so the name starts afresh in the Web UI too. Best effort: a failure is logged, and a
 * later run of the name starts all the same (start-run.ts tells an earlier run's execution from its own).
 */
async function deleteRunExecution(deps: DeleteDeps, workflowId: string): Promise<void> {
  try {
    await deps.temporal.workflowService.deleteWorkflowExecution({ namespace: deps.temporal.options.namespace, workflowExecution: { workflowId } });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === grpcStatus.NOT_FOUND) return; // past Temporal's retention already
    deps.logger.warn({ run: workflowId, err }, 'run deleted, but Temporal did not delete its workflow execution');
  }
}
