import Router from '@koa/router';
import type { Context } from 'koa';
import { badRequest, notFound } from '../../../errors';
import { findTask, type TaskRecord } from '../../../store/tasks';
import {
  deleteTaskSchedule,
  listTaskSchedules,
  putTaskSchedule,
  readTaskSchedule,
  type TaskOf,
  type TaskSchedule,
} from '../../../temporal/task-schedules';
import type { TaskScheduleRef } from '../../../temporal/ids';
import { scheduledRunName } from '../../../contract/messages';
import type { AppDeps } from '../../deps';
import { presentSchedule } from '../../presenters/schedule';
import { parse } from '../../validate';
import { runUrlA, runUrlB } from '../runs/router';
import { ownerFromPath } from '../users/owner';
import { withProtoKey } from '../runs/schema';
import type { RunService } from '../runs/service';
import { scheduleName, variantASchedule, variantBSchedule } from './schema';

/**
 * A task's schedules (docs/schedules.md), on either variant's task path:
 * `GET <task path>/schedules`, `PUT|GET|DELETE <task path>/schedules/:schedule`, `POST .../:schedule/trigger`.
 * Variant A paths carry the trigger data as `parameters`, Variant B paths as `payload`.
 */
export function schedulesRouter(deps: AppDeps, runs: Pick<RunService, 'trigger'>): Router {
  const router = new Router();
  const { models } = deps.db;
  const base = deps.config.PUBLIC_URL;
  const startDeps = { models, temporal: deps.temporal, config: deps.config };

  const variants = [
    {
      path: '/profiles/:user/:profile/tasks/:task/schedules',
      data: 'parameters' as const,
      body: (value: unknown) => {
        const { parameters, ...rest } = parse(variantASchedule, value);
        return { ...rest, payload: withProtoKey(value, parameters) as Record<string, unknown> };
      },
      where: (ctx: Context): TaskOf => {
        if (ctx.params.profile !== 'default') throw notFound(`profile "${ctx.params.profile}" (Variant A has only "default")`);
        return { owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.task}"`), profile: 'default', task: ctx.params.task! };
      },
      url: (t: TaskOf, run: string) => runUrlA(base, t.owner, t.task, run),
    },
    {
      path: '/tasks/:user/:profile/:task/schedules',
      data: 'payload' as const,
      body: (value: unknown) => parse(variantBSchedule, value),
      where: (ctx: Context): TaskOf => ({
        owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.profile}/${ctx.params.task}"`),
        profile: ctx.params.profile!,
        task: ctx.params.task!,
      }),
      url: (t: TaskOf, run: string) => runUrlB(base, t.owner, t.profile, t.task, run),
    },
  ];

  const loadTask = async (t: TaskOf): Promise<TaskRecord> => {
    const task = await findTask(models, { owner: t.owner, profile: t.profile, name: t.task });
    if (!task) throw notFound(`task "${t.profile}/${t.task}"`);
    return task;
  };

  for (const { path, data, body, where, url } of variants) {
    const scheduleOf = (ctx: Context): TaskScheduleRef => ({ ...where(ctx), schedule: parse(scheduleName, ctx.params.schedule, 'path.schedule') });
    const present = (s: TaskSchedule, t: TaskOf) => presentSchedule(s, data, (run) => url(t, run));
    const readOne = async (ref: TaskScheduleRef) => {
      const schedule = await readTaskSchedule(startDeps, ref);
      if (!schedule) throw notFound(`schedule "${ref.schedule}"`);
      return schedule;
    };

    router.get(path, async (ctx) => {
      const t = where(ctx);
      await loadTask(t);
      ctx.body = { schedules: (await listTaskSchedules(startDeps, t)).map((s) => present(s, t)) };
    });

    router.put(`${path}/:schedule`, async (ctx) => {
      const ref = scheduleOf(ctx);
      const { payload, ...timing } = body(ctx.request.body);
      // The trigger data rides in the schedule's action and every action's history: bounded like a run's inline data.
      if (Buffer.byteLength(JSON.stringify(payload)) > deps.config.RUN_INLINE_BYTES) {
        throw badRequest(`${data}: larger than ${deps.config.RUN_INLINE_BYTES} bytes as JSON (RUN_INLINE_BYTES)`);
      }
      await loadTask(ref);
      const { created } = await putTaskSchedule(startDeps, ref, { ...timing, payload });
      ctx.status = created ? 201 : 200;
      ctx.body = present(await readOne(ref), ref);
    });

    router.get(`${path}/:schedule`, async (ctx) => {
      const ref = scheduleOf(ctx);
      await loadTask(ref);
      ctx.body = present(await readOne(ref), ref);
    });

    router.delete(`${path}/:schedule`, async (ctx) => {
      const ref = scheduleOf(ctx);
      await loadTask(ref);
      if (!(await deleteTaskSchedule(startDeps, ref))) throw notFound(`schedule "${ref.schedule}"`);
      ctx.status = 204;
    });

    // One run now, with the schedule's trigger data, named by the time of the trigger (outside the overlap policy).
    router.post(`${path}/:schedule/trigger`, async (ctx) => {
      const ref = scheduleOf(ctx);
      const task = await loadTask(ref);
      const schedule = await readOne(ref);
      const run = scheduledRunName(ref.schedule, new Date());
      // As any trigger: TRIGGER_LIMIT_PER_MINUTE and LIVE_RUNS_PER_USER apply, a 503 names the run.
      await runs.trigger(ctx, task, run, schedule.payload, url(ref, run));
      ctx.status = 202;
    });
  }
  return router;
}
