import { NO_USAGE } from '../../../workflows/constants';
import type { ResultEntry, RunStatus, RunUsage } from '../../../workflows/types';

export interface RunView {
  name: string;
  status: RunStatus;
  results: ResultEntry[];
  created_at: string;
  modified_at: string;
  /** Tokens as the providers reported them, model and tool calls (an addition to the contract's run object). */
  usage: RunUsage;
}

/**
 * The run object of the contract, from a live query or from the record: one shape either way. `usage` is zero for
 * runs recorded before it was counted.
 */
export function presentRun(run: { name: string; status: string; results: ResultEntry[]; createdAt: Date | number; modifiedAt: Date | number; usage?: RunUsage | null }): RunView {
  return {
    name: run.name,
    status: run.status as RunStatus,
    results: run.results,
    created_at: new Date(run.createdAt).toISOString(),
    modified_at: new Date(run.modifiedAt).toISOString(),
    usage: { ...NO_USAGE, ...run.usage },
  };
}
