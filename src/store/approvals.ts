import type { ApprovalEntry, AskedInput, HeldEntry, RunIdentity } from '../contract/types';
import type { Models } from './models';
import { loadText, resolveEntry, StoredContentMissing } from './run-content';
import { entryCount, readEntries, recordIdentity, type RunRecord } from './runs';

/**
 * What a person must answer for one of the owner's runs to go on: a tool call to decide (`approval`), or a question
 * of an MCP server (`input`, docs/mcp.md "Inputs").
 */
export type PendingApproval =
  | { kind: 'approval'; run: RunIdentity; id: string; tool: string; arguments: Record<string, unknown>; asked_at: Date }
  | ({ kind: 'input'; run: RunIdentity; asked_at: Date } & AskedInput);

/**
 * At most this many pending runs are looked at per call, oldest change first: a user past it has a backlog no one
 * reads through in one list anyway, and each page after the first of a run's entries costs a read.
 */
export const PENDING_RUNS_SCANNED = 1000;

type Scanned = Pick<RunRecord, '_id' | 'owner' | 'profile' | 'task' | 'name' | 'results' | 'entry_count' | 'modified_at'>;

/**
 * What waits for the owner, oldest first, optionally of one profile and task. A run waits when its record is `pending`
 * and its last entry asks for an approval or an input (the workflow records both together, and one at a time; an
 * answer's entry follows the question's). This scans the owner's pending runs (no index serves `status`; FerretDB scans for any filter
 * but `_id` anyway), PENDING_RUNS_SCANNED at most. A run whose last entry is no longer stored (deleted meanwhile) is
 * left out.
 */
export async function pendingApprovals(models: Models, owner: string, only: { profile?: string; task?: string; profiles?: readonly string[] | null } = {}): Promise<PendingApproval[]> {
  const where: Record<string, unknown> = { owner, status: 'pending' };
  if (only.profile !== undefined) where.profile = only.profile;
  else if (only.profiles) where.profile = { $in: only.profiles };
  if (only.task !== undefined) where.task = only.task;
  const runs = await models.Run.find(where, { owner: 1, profile: 1, task: 1, name: 1, results: 1, entry_count: 1, modified_at: 1 })
    .sort({ modified_at: 1, _id: 1 })
    .limit(PENDING_RUNS_SCANNED)
    .lean<Scanned[]>();
  const asked = await Promise.all(runs.map((run) => lastApproval(models, run)));
  return asked.filter((a): a is PendingApproval => a !== undefined);
}

async function lastApproval(models: Models, run: Scanned): Promise<PendingApproval | undefined> {
  const count = entryCount(run);
  if (count === 0) return undefined;
  try {
    const [last] = await readEntries(models, run, count - 1, count);
    if (last && 'input' in last) return { kind: 'input', run: recordIdentity(run), ...last.input, asked_at: run.modified_at };
    if (!last || !('approval' in last)) return undefined;
    const entry = (await resolveEntry(last as HeldEntry, (text) => loadText(models, text))) as ApprovalEntry;
    return { kind: 'approval', run: recordIdentity(run), id: entry.approval.id, tool: entry.approval.tool, arguments: entry.approval.arguments, asked_at: run.modified_at };
  } catch (err) {
    if (err instanceof StoredContentMissing) return undefined;
    throw err;
  }
}
