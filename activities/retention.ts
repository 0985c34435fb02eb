import type { RunRetentionBatch } from '../src/contract/messages';
import { findExpiredRuns } from '../src/store/runs';
import type { Runs } from '../src/runs';
import type { ActivityDeps } from './deps';

export function createRetentionActivities(deps: Pick<ActivityDeps, 'db' | 'logger'>, runs: Pick<Runs, 'deleteClosed'>) {
  return {
    /**
     * Deletes up to `limit` closed runs last changed before `before` (ms): their contents, records and workflow
     * executions (runs/delete.ts). FerretDB scans `runs` for this filter, so one call finds one bounded batch, ids only.
     * Returns how many it deleted and whether the batch was full (more may be left).
     */
    async deleteExpiredRuns(input: RunRetentionBatch): Promise<{ deleted: number; more: boolean }> {
      const { models } = deps.db;
      const before = new Date(input.before);
      const found = await findExpiredRuns(models, before, input.limit);
      const deleted = await runs.deleteClosed(found, { modifiedBefore: before });
      if (deleted.length) deps.logger.info({ deleted: deleted.length, before: before.toISOString() }, 'retention deleted expired runs');
      return { deleted: deleted.length, more: found.length === input.limit };
    },
  };
}

export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
