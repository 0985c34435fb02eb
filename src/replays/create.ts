import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Models } from '../store/models';
import type { ReplayOverrides, ReplayTools, RunIdentity, Runner } from '../contract/types';
import { isTerminal, RUNNERS, runWorkflowId } from '../contract/constants';
import { badRequest, conflict, notFound } from '../errors';
import { findRun, recordIdentity, type ReplayFields, type RunRecord } from '../store/runs';
import { findTask, findTaskVersion, keyForRunner, operatorKeyVariable } from '../store/tasks';
import { NAME_PATTERN, NAME_RULE } from '../store/names';
import { copyRecordedTools, nextReplayNumber, readRecordedCalls } from '../store/replay-tools';
import { triggerRun } from '../runs/trigger';

export type { ReplayOverrides, ReplayTools };
/** The diff of a replay from its original, as GET <replay path>/diff answers it (diff.ts). */
export { runDiff, type RunDiff } from './diff';

/** Generated names tried before giving up (each one in use by another run is skipped). */
const NAME_TRIES = 100;

/**
 * Makes a replay of a closed run (docs/replays.md): a new run of the same task with the original's trigger data, its
 * task version (or `overrides.task_version`), its overrides, and its tool calls answered per `tools` from the
 * original's recorded results, which are copied for the replay before it starts (deleting the original later does not
 * take them away). Started through the trigger (limits, quotas, usage, admission as any run), at the lowest priority.
 * Named `name`, or `<run>.r<n>` with `n` taken from a counter, skipping names in use. Returns `created: false` when
 * `name` was used before (that run is the answer, as a trigger's is). `eval`: the id of the eval that makes it.
 * Throws 409 `run_live` when the original is not closed, 404 when its task is gone, 400 naming `task_version` (no such
 * version), `runner` (unknown; `missing_key` when neither the task nor the server has a key for it), `model` (needed
 * with another runner) or `name` (not a run name, or the generated one would pass the name limit).
 * Templates are not checked here: a caller that takes a `prompt` from a client checks it first (routes/tasks checkTemplate).
 */
export async function createReplay(
  deps: { models: Models; temporal: Client; config: Config; logger: Logger },
  args: { original: RunRecord; name?: string; overrides: ReplayOverrides; tools: ReplayTools; eval?: string },
): Promise<{ identity: RunIdentity; created: boolean }> {
  const { models } = deps;
  const { original, overrides, tools } = args;
  if (!isTerminal(original.status)) throw conflict(`run "${original.name}" is ${original.status}: only a closed run (ready or error) can be replayed`, 'run_live');
  const task = await findTask(models, { owner: original.owner, profile: original.profile, name: original.task });
  if (!task || !task._id.equals(original.task_id)) throw notFound(`task "${original.task}" of run "${original.name}"`);
  const versionNo = overrides.task_version ?? original.task_version;
  const version = await findTaskVersion(models, task._id, versionNo);
  if (!version) throw badRequest(`task_version: task "${task.name}" has no version ${versionNo}`);
  const runner = (overrides.runner ?? version.runner) as Runner;
  if (!(RUNNERS as readonly string[]).includes(runner)) throw badRequest(`runner: expected one of ${RUNNERS.join(', ')}`);
  if (runner !== version.runner && overrides.model === undefined) throw badRequest(`model: required when the runner changes (the task version's model is for ${version.runner})`);
  if (!keyForRunner(deps.config, version, runner)) {
    throw badRequest(`runner: task "${task.name}" has no key for "${runner}" and this server has no operator key (${operatorKeyVariable(runner)}) for it`, 'missing_key');
  }
  if (args.name !== undefined && !NAME_PATTERN.test(args.name)) throw badRequest(`name: expected ${NAME_RULE}`);

  const payload = JSON.parse(original.payload_json) as Record<string, unknown>;
  const fields: ReplayFields = {
    replay: { of: original.name, of_id: original._id, of_created_at: original.created_at, tools, overrides: definedOnly(overrides) },
    ...(args.eval !== undefined ? { eval: args.eval } : {}),
  };
  const forRun = { ...task, version: versionNo, runner, model: overrides.model ?? version.model };
  const calls = tools === 'live' ? [] : await readRecordedCalls(models, original);
  const at = (name: string): RunIdentity => ({ ...recordIdentity(original), run: name });

  const start = async (identity: RunIdentity): Promise<boolean> => {
    await copyRecordedTools(models, calls, runWorkflowId(identity));
    return (await triggerRun(deps, forRun, identity.run, payload, 'replay', fields)).created;
  };

  if (args.name !== undefined) {
    const identity = at(args.name);
    // A name used before answers with that run (as a trigger does), and its recorded results are left alone.
    if (await findRun(models, identity)) return { identity, created: false };
    return { identity, created: await start(identity) };
  }
  for (let tries = 0; tries < NAME_TRIES; tries++) {
    const name = `${original.name}.r${await nextReplayNumber(models, original._id)}`;
    if (!NAME_PATTERN.test(name)) throw badRequest(`name: the replay's name "${name}" would pass the run name limit (${NAME_RULE}); give one`);
    const identity = at(name);
    if (await findRun(models, identity)) continue;
    // A run of this name made between the look and the trigger (created: false) keeps the copies written under its
    // _id unused (a replay of the same original has the very same ones); they go when it is deleted.
    if (await start(identity)) return { identity, created: true };
  }
  throw conflict(`run "${original.name}": no free replay name after ${NAME_TRIES} tries; give one`, 'name_taken');
}

/** The overrides without undefined fields (so the record holds only what was given). */
function definedOnly(overrides: ReplayOverrides): ReplayOverrides {
  return Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)) as ReplayOverrides;
}
