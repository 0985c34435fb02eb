import Router from '@koa/router';
import type { Context } from 'koa';
import { badRequest, dependencyUnavailable, notFound } from '../../../errors';
import { unavailableDependency } from '../../../dependencies';
import { findTask, type TaskRecord } from '../../../store/tasks';
import { triggerRun } from '../../../temporal/start-run';
import {
  deleteTaskSchedule,
  listTaskSchedules,
  putTaskSchedule,
  readTaskSchedule,
  type TaskOf,
  type TaskSchedule,
} from '../../../temporal/task-schedules';
import type { TaskScheduleRef } from '../../../temporal/ids';
import { scheduledRunName } from '../../../../workflows/scheduled-run';
import type { AppDeps } from '../../deps';
import { parse } from '../../validate';
import { runUrlA, runUrlB } from '../runs/router';
import { ownerFromPath } from '../users/owner';
import { scheduleName, variantASchedule, variantBSchedule } from './schema';

/**
 * A task's schedules (docs/schedules.md), on either variant's task path:
 * `GET <task path>/schedules`, `PUT|GET|DELETE <task path>/schedules/:schedule`, `POST .../:schedule/trigger`.
 * Variant A paths carry the trigger data as `parameters`, Variant B paths as `payload`.
 */
export function schedulesRouter(deps: AppDeps): Router {
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
        return { ...rest, payload: parameters as Record<string, unknown> };
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
    const present = (s: TaskSchedule, t: TaskOf) => ({
      name: s.name,
      ...(s.cron !== undefined ? { cron: s.cron } : { every: s.every }),
      timezone: s.timezone,
      paused: s.paused,
      [data]: s.payload,
      next_action_times: s.nextActionTimes.map((d) => d.toISOString()),
      recent_runs: s.recentRuns.map((r) => ({ name: r.run, url: url(t, r.run), scheduled_at: r.scheduledAt.toISOString() })),
      created_at: s.createdAt.toISOString(),
      ...(s.updatedAt ? { modified_at: s.updatedAt.toISOString() } : {}),
    });
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
      const runUrl = url(ref, run);
      try {
        await triggerRun(startDeps, task, run, schedule.payload);
      } catch (err) {
        const dependency = unavailableDependency(err);
        if (!dependency) throw err;
        throw dependencyUnavailable(dependency, { run, url: runUrl }, `the run "${run}" may have been recorded: its URL will show it`);
      }
      ctx.status = 202;
      ctx.body = { url: runUrl };
    });
  }
  return router;
}
