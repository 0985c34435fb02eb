import { conflict, notFound } from '../../../errors';
import { findRun, type RunRecord } from '../../../store/runs';
import { isTerminal } from '../../../contract/constants';
import type { RunIdentity } from '../../../contract/types';
import type { Runs } from '../../../runs';

/**
 * Deletes a closed run (`ready` or `error`) for good: its record, what it stored and its workflow execution, so its
 * name is free again. Reads the record from the store, not a cache: only its current status may decide. Throws 404
 * when there is no such run (or it was deleted meanwhile), 409 `run_live` while it is `pending` or `running`.
 * Returns the record as it was.
 */
export async function deleteClosedRun(runs: Runs, id: RunIdentity): Promise<RunRecord> {
  const { models, logger } = runs.deps;
  const record = await findRun(models, id);
  if (!record) throw notFound(`run "${id.run}"`);
  if (!isTerminal(record.status)) throw conflict(`run "${id.run}" is ${record.status}: only a closed run (ready or error) can be deleted`, 'run_live');
  const deleted = await runs.deleteClosed([record]);
  if (deleted.length === 0) throw notFound(`run "${id.run}"`);
  logger.info({ run: record._id }, 'run deleted');
  return record;
}
