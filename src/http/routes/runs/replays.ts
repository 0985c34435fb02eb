import { conflict, notFound, AppError } from '../../../errors';
import { isTerminal } from '../../../contract/constants';
import type { RunIdentity } from '../../../contract/types';
import type { Runs } from '../../../runs';
import type { RateLimits } from '../../rate-limits';
import { createReplay } from '../../../replays/create';
import { runDiff, type RunDiff } from '../../../replays/diff';
import { StoredContentMissing } from '../../../store/run-content';
import { findRun } from '../../../store/runs';
import { checkTemplate } from '../tasks/schema';
import type { ReplayBody } from './schema';

/**
 * A run's replays (docs/replays.md): make one, and the diff of one from its original. Throws as createReplay does,
 * and 404 for an unknown run.
 */
export function runReplays(lifecycle: Runs, limits: RateLimits) {
  const { models, config } = lifecycle.deps;
  return {
    /**
     * Makes a replay of run `id`, counted as a trigger of its task (TRIGGER_LIMIT_PER_MINUTE). `created: false` when
     * `body.name` was used before (that run's identity is given).
     */
    async replay(id: RunIdentity, body: ReplayBody): Promise<{ identity: RunIdentity; created: boolean }> {
      if (body.prompt !== undefined) checkTemplate(body.prompt, 'prompt', config);
      const original = await findRun(models, id);
      if (!original) throw notFound(`run "${id.run}"`);
      if (!isTerminal(original.status)) throw conflict(`run "${id.run}" is ${original.status}: only a closed run (ready or error) can be replayed`, 'run_live');
      const { name, tools, ...overrides } = body;
      const giveBack = await limits.trigger(String(original.task_id));
      try {
        const made = await createReplay(lifecycle.deps, { original, overrides, tools, ...(name !== undefined ? { name } : {}) });
        if (!made.created) await giveBack();
        return made;
      } catch (err) {
        await giveBack();
        // Its stored conversation went while it was read: the run is being deleted.
        if (err instanceof StoredContentMissing) throw notFound(`run "${id.run}"`);
        throw err;
      }
    },

    /**
     * The diff of replay `id` from its original. Throws 404 for an unknown run, 404 `not_a_replay` for a run that is
     * not a replay, 404 when the original was deleted, 409 `run_live` while either run is live.
     */
    async diff(id: RunIdentity): Promise<RunDiff> {
      const replay = await findRun(models, id);
      if (!replay) throw notFound(`run "${id.run}"`);
      if (!replay.replay) throw new AppError(404, 'not_a_replay', `run "${id.run}" is not a replay`);
      const original = await findRun(models, replay.replay.of_id);
      if (!original || original.created_at.getTime() !== replay.replay.of_created_at.getTime()) throw notFound(`run "${replay.replay.of}" (the original of "${id.run}": it was deleted)`);
      for (const run of [original, replay]) {
        if (!isTerminal(run.status)) throw conflict(`run "${run.name}" is ${run.status}: a diff needs both runs closed`, 'run_live');
      }
      try {
        return await runDiff(models, original, replay);
      } catch (err) {
        if (err instanceof StoredContentMissing) throw notFound(`run "${id.run}" or its original (deleted while being read)`);
        throw err;
      }
    },
  };
}
