import type { RunRetentionBatch } from '../src/contract/messages';
import { deleteClosedRuns, type RunToDelete } from '../src/temporal/run-delete';
import { TERMINAL } from '../src/contract/constants';
import type { ActivityDeps } from './deps';

export function createRetentionActivities(deps: Pick<ActivityDeps, 'db' | 'temporal' | 'logger'>) {
  return {
    /**
     * Deletes up to `limit` closed runs last changed before `before` (ms): their contents, records and workflow
     * executions (run-delete.ts). FerretDB scans `runs` for this filter, so one call finds one bounded batch, ids only.
     * Returns how many it deleted and whether the batch was full (more may be left).
     */
    async deleteExpiredRuns(input: RunRetentionBatch): Promise<{ deleted: number; more: boolean }> {
      const { models } = deps.db;
      const before = new Date(input.before);
      const found = await models.Run.find({ status: { $in: TERMINAL }, modified_at: { $lt: before } }, { _id: 1, created_at: 1 })
        .limit(input.limit)
        .lean<RunToDelete[]>();
      const deleted = await deleteClosedRuns({ models, temporal: deps.temporal, logger: deps.logger }, found, { modifiedBefore: before });
      if (deleted.length) deps.logger.info({ deleted: deleted.length, before: before.toISOString() }, 'retention deleted expired runs');
      return { deleted: deleted.length, more: found.length === input.limit };
    },
  };
}

export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
