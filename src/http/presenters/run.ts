import type { ResultEntry, RunStatus } from '../../../workflows/types';

export interface RunView {
  name: string;
  status: RunStatus;
  results: ResultEntry[];
  created_at: string;
  modified_at: string;
}

/** The run object of the contract, from a live query or from the record: one shape either way. */
export function presentRun(run: { name: string; status: string; results: ResultEntry[]; createdAt: Date | number; modifiedAt: Date | number }): RunView {
  return {
    name: run.name,
    status: run.status as RunStatus,
    results: run.results,
    created_at: new Date(run.createdAt).toISOString(),
    modified_at: new Date(run.modifiedAt).toISOString(),
  };
}
