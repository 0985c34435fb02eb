import type { Context } from 'koa';
import { dependencyUnavailable, notFound } from '../../../errors';
import { unavailableDependency } from '../../../dependencies';
import { findRun, runWorkflowId } from '../../../store/runs';
import type { RateLimits } from '../../rate-limits';
import { RateLimited } from '../../../errors';
import { revocationLookup, type RevocationLookup } from '../../../store/signed-urls';
import { findTask, type TaskRecord, type TaskRef } from '../../../store/tasks';
import { createTtlCache } from '../../../ttl-cache';
import type { Runs } from '../../../runs';
import type { RunReader } from '../../../runs/live-reader';
import type { AppDeps } from '../../deps';
import { whenUnavailable } from '../../middleware/deadline';
import { runControl } from './control';
import { runReads } from './reads';
import { deleteClosedRun } from './delete';
import { runEvents } from './events';
import { runReplays } from './replays';

/** What both variants' run routes share: load the task, trigger, read one run, list runs. */
export function runService(deps: AppDeps, reader: RunReader, limits: RateLimits, lifecycle: Runs) {
  const { models } = deps.db;
  // What a trigger looks up (the task, the URL's revocations) is kept for TRIGGER_CACHE_MS: a burst of triggers costs
  // the database one insert each. Changes made through this process take effect at once, through others within it.
  const triggerTasks = createTtlCache<TaskRecord | null>(deps.config.TRIGGER_CACHE_MS);
  const revocations = createTtlCache<{ revoked_at: Date } | null>(deps.config.TRIGGER_CACHE_MS);
  const readRevocation = revocationLookup(models);
  const taskKey = (ref: TaskRef) => JSON.stringify([ref.owner, ref.profile, ref.name]);
  const findTaskForTrigger = (owner: string, profile: string, name: string): Promise<TaskRecord | null> => {
    const ref = { owner, profile, name };
    return triggerTasks.get(taskKey(ref), () => findTask(models, ref));
  };
  const reads = runReads(deps, lifecycle, reader, (record) => lifecycle.healLostStart(record, () => findTaskForTrigger(record.owner, record.profile, record.task)));

  const control = runControl(lifecycle, (runId) => {
    reads.forgetRecords(runId);
    reader.forget(runId);
  });

  /**
   * Records and starts a run, counted against TRIGGER_LIMIT_PER_MINUTE for the task: past it, RateLimited and
   * nothing started, unless the run is already there (a retry of a trigger that went through: `created: false`).
   * What the HTTP trigger below and the MCP server's tool calls both do.
   */
  const triggerCounted = async (task: TaskRecord, run: string, payload: Record<string, unknown>): Promise<{ created: boolean }> => {
    let giveBack: () => Promise<void>;
    try {
      giveBack = await limits.trigger(String(task._id));
    } catch (err) {
      if (!(err instanceof RateLimited) || !(await findRun(models, { owner: task.owner, profile: task.profile, task: task.name, run }))) throw err;
      return { created: false };
    }
    try {
      const { created } = await lifecycle.trigger(task, run, payload);
      if (!created) await giveBack();
      return { created };
    } catch (err) {
      await giveBack();
      throw err;
    }
  };

  const replays = runReplays(lifecycle, limits);

  return {
    /** The run's lifecycle this API process built once (src/runs/). */
    lifecycle,
    /** `POST <run path>/replays`: a replay of a closed run (replays.ts). */
    replay: replays.replay,
    /** `GET <replay path>/diff`: the replay's difference from its original (replays.ts). */
    diff: replays.diff,
    read: reads.read,
    /** The run object as a read presents it, or null when there is no such run (reads.ts `view`). */
    view: reads.view,
    /** The run's status from its record, without asking its workflow (reads.ts `status`). */
    status: reads.status,
    list: reads.list,
    /** `GET <run path>/events`: the run as Server-Sent Events, its live reads shared with polls (events.ts). */
    events: runEvents(deps, reads),
    cancel: control.cancel,
    decide: control.decide,
    answer: control.answer,
    /** Deletes a closed run (404 when there is none, 409 `run_live` while it runs); this process forgets it at once. */
    async deleteRun(id: Parameters<typeof deleteClosedRun>[1]) {
      reads.forgetRun(await deleteClosedRun(lifecycle, id));
    },
    /** This process serves a deleted task's runs as gone at once (others within RUN_RECORD_CACHE_MS). */
    forgetTask(ref: TaskRef) {
      reads.forgetRecords(runWorkflowId({ owner: ref.owner, profile: ref.profile, task: ref.name, run: '' }));
      triggerTasks.forget(taskKey(ref));
    },
    /** The task was saved: this process's next trigger uses the new version. */
    taskSaved(ref: TaskRef) {
      triggerTasks.forget(taskKey(ref));
    },
    /** A revocation was written (`<url id>` or `task:<task _id>`): this process honours it at once. */
    forgetRevocation(id: string) {
      revocations.forget(id);
    },
    /** Revocation lookups for verifying a signed trigger. */
    revocations: ((id) => revocations.get(id, () => readRevocation(id))) as RevocationLookup,

    async loadTask(owner: string, profile: string, name: string) {
      const task = await findTask(models, { owner, profile, name });
      if (!task) throw notFound(`task "${profile}/${name}"`);
      return task;
    },
    /** The task as a trigger sees it (null when there is none): cached, see above. */
    findTaskForTrigger,
    async loadTaskForTrigger(owner: string, profile: string, name: string) {
      const task = await findTaskForTrigger(owner, profile, name);
      if (!task) throw notFound(`task "${profile}/${name}"`);
      return task;
    },

    triggerCounted,

    /**
     * 201 when the run was created, 200 when the name was used before; both answer the run's URL (see triggerCounted).
     */
    async trigger(ctx: Context, task: TaskRecord, run: string, payload: Record<string, unknown>, url: string) {
      let created: boolean;
      // Cut at the request's deadline (middleware/deadline.ts), the 503 names the run as this one's own does.
      whenUnavailable(ctx, { extra: { run, url }, hint: `the run "${run}" may have been recorded: retry with the same run name and it runs once` });
      try {
        ({ created } = await triggerCounted(task, run, payload));
      } catch (err) {
        // The run may be recorded (and will then be started): the answer names it, so a retry with that name runs once.
        const dependency = unavailableDependency(err);
        if (!dependency) throw err;
        throw dependencyUnavailable(dependency, { run, url }, `the run "${run}" may have been recorded: retry with the same run name and it runs once`);
      }
      ctx.status = created ? 201 : 200;
      ctx.body = { url };
    },
  };
}

export type RunService = ReturnType<typeof runService>;
