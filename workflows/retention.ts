import { proxyActivities } from '@temporalio/workflow';
import type { RetentionActivities } from '../activities/retention';
import { RETAIN } from './limits';

/** Runs one activity call deletes: one scan of `runs`, `run_pages` and `run_blobs` each (FerretDB filters by scanning). */
const BATCH = 200;
/** Batches per pass: what is left waits for the next pass, so one pass stays short whatever the backlog. */
const MAX_BATCHES = 25;

/**
 * Started by a Schedule every RETENTION_INTERVAL_MS while RUN_RETENTION_DAYS is set (src/temporal/retention-schedule.ts):
 * deletes the closed runs last changed more than `retentionMs` ago, in batches, with everything they stored. Live
 * runs are never touched. A failed batch waits for the next pass.
 */
export async function retainRuns(input: { retentionMs: number }): Promise<{ deleted: number }> {
  const { deleteExpiredRuns } = proxyActivities<RetentionActivities>(RETAIN);
  const before = Date.now() - input.retentionMs;
  let deleted = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const result = await deleteExpiredRuns({ before, limit: BATCH });
    deleted += result.deleted;
    if (!result.more) break;
  }
  return { deleted };
}
