import crypto from 'node:crypto';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import { findRun, type RunRecord } from '../../../store/runs';
import { revocationLookup, type RevocationLookup } from '../../../store/signed-urls';
import { findTask, type TaskRecord, type TaskRef } from '../../../store/tasks';
import { createTtlCache } from '../../../ttl-cache';
import { etagMatches } from '../../etag';
import { healLostStart, triggerRun } from '../../../temporal/start-run';
import type { RunReader } from '../../../temporal/run-reader';
import { runWorkflowId, type RunIdentity } from '../../../temporal/ids';
import { TERMINAL, type RunState, type RunStatus } from '../../../../workflows/types';
import type { AppDeps } from '../../deps';
import { presentRun, type RunView } from '../../presenters/run';

/** What both variants' run routes share: load the task, trigger, read one run. */
export function runService(deps: AppDeps, reader: RunReader) {
  const { models } = deps.db;
  // Run records as reads see them, kept for RUN_RECORD_CACHE_MS (refreshed ahead while polled): polls cost no database
  // read each. Another API process may serve a run deleted with its task that long. A miss is not kept: a run is
  // readable as soon as its trigger answered.
  const records = createTtlCache<RunRecord | null>(deps.config.RUN_RECORD_CACHE_MS, { refreshAhead: true, keep: (record) => record !== null });
  /** A closed run's rendered body and ETag, per record (the cache hands out the same object until it reloads). */
  const closedBodies = new WeakMap<RunRecord, { body: string; etag: string }>();
  /** A live run's rendered body, per query answer (the reader hands out the same object until it refreshes). */
  const liveBodies = new WeakMap<RunState, string>();
  // What a trigger looks up (the task, the URL's revocations) is kept for TRIGGER_CACHE_MS: a burst of triggers costs
  // the database one insert each. Changes made through this process take effect at once, through others within it.
  const triggerTasks = createTtlCache<TaskRecord | null>(deps.config.TRIGGER_CACHE_MS);
  const revocations = createTtlCache<{ revoked_at: Date } | null>(deps.config.TRIGGER_CACHE_MS);
  const readRevocation = revocationLookup(models);
  const taskKey = (ref: TaskRef) => JSON.stringify([ref.owner, ref.profile, ref.name]);

  return {
    /** This process serves a deleted task's runs as gone at once (others within RUN_RECORD_CACHE_MS). */
    forgetTask(ref: TaskRef) {
      records.forgetPrefix(`${runWorkflowId({ owner: ref.owner, profile: ref.profile, task: ref.name, run: '' })}`);
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
    findTaskForTrigger(owner: string, profile: string, name: string): Promise<TaskRecord | null> {
      const ref = { owner, profile, name };
      return triggerTasks.get(taskKey(ref), () => findTask(models, ref));
    },
    async loadTaskForTrigger(owner: string, profile: string, name: string) {
      const task = await this.findTaskForTrigger(owner, profile, name);
      if (!task) throw notFound(`task "${profile}/${name}"`);
      return task;
    },

    /** 201 when the run was created, 200 when the name was used before; both answer the run's URL. */
    async trigger(ctx: Context, task: TaskRecord, run: string, payload: Record<string, unknown>, url: string) {
      const { created } = await triggerRun({ models, temporal: deps.temporal, config: deps.config }, task, run, payload);
      ctx.status = created ? 201 : 200;
      ctx.body = { url };
    },

    /**
     * A live run answers from the workflow's query (shared between concurrent polls); a closed run, which never
     * changes again, from its record, with an ETag.
     */
    async read(ctx: Context, id: RunIdentity): Promise<void> {
      const record = await records.get(runWorkflowId(id), () => findRun(models, id));
      if (!record) throw notFound(`run "${id.run}"`);
      const fromRecord = () => presentRun({ name: record.name, status: record.status, results: record.results, createdAt: record.created_at, modifiedAt: record.modified_at });
      if (TERMINAL.includes(record.status as RunStatus)) {
        let closed = closedBodies.get(record);
        if (!closed) closedBodies.set(record, (closed = render(fromRecord())));
        return sendClosed(ctx, closed);
      }
      const live = await reader.read(record._id);
      if (!live) {
        await healLostStart({ models, temporal: deps.temporal, config: deps.config }, record, () => this.findTaskForTrigger(id.owner, id.profile, id.task));
        ctx.set('Cache-Control', 'no-store');
        ctx.body = fromRecord();
        return;
      }
      if (TERMINAL.includes(live.status)) {
        records.forget(record._id); // the next read takes the closed record
        reader.forget(record._id);
        return sendClosed(ctx, render(presentRun({ name: record.name, status: live.status, results: live.results, createdAt: record.created_at, modifiedAt: live.modifiedAt })));
      }
      // One query answer serves every poll of the run until the next: render it once.
      let body = liveBodies.get(live);
      if (body === undefined) {
        body = JSON.stringify(presentRun({ name: record.name, status: live.status, results: live.results, createdAt: record.created_at, modifiedAt: live.modifiedAt }));
        liveBodies.set(live, body);
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'application/json';
      ctx.body = body;
    },
  };
}

/** A closed run never changes again: it answers with an ETag, and 304 to a matching If-None-Match. */
function sendClosed(ctx: Context, closed: { body: string; etag: string }) {
  ctx.set('ETag', closed.etag);
  ctx.set('Cache-Control', 'private, no-cache');
  if (etagMatches(ctx.get('if-none-match'), closed.etag)) {
    ctx.status = 304;
    return;
  }
  ctx.type = 'application/json';
  ctx.body = closed.body;
}

function render(view: RunView) {
  const body = JSON.stringify(view);
  return { body, etag: `"${crypto.createHash('sha1').update(body).digest('base64url')}"` };
}

export type RunService = ReturnType<typeof runService>;
