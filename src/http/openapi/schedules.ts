import { z } from 'zod';
import { scheduleViewA, scheduleViewB } from '../presenters/schedule';
import { scheduleName, variantASchedule, variantBSchedule } from '../routes/schedules/schema';
import { taskParams } from '../routes/tasks/schema';
import { defaultProfile, errors, pathParams, runUrl } from './common';
import type { Example, Operation } from './operation';

/** A task's schedules (docs/schedules.md), on either variant's task path. */

const scheduleExample = (data: Record<string, unknown>, runBase: string) => ({
  name: 'weekdays',
  cron: '30 8 * * 1-5',
  timezone: 'Europe/Paris',
  paused: false,
  ...data,
  next_action_times: ['2026-11-24T07:30:00.000Z', '2026-11-25T07:30:00.000Z', '2026-11-26T07:30:00.000Z'],
  recent_runs: [{ name: 'weekdays-20261123T073000Z', url: `${runBase}/weekdays-20261123T073000Z`, scheduled_at: '2026-11-23T07:30:00.000Z' }],
  created_at: '2026-11-20T10:00:00.000Z',
  modified_at: '2026-11-21T10:00:00.000Z',
});

export function scheduleOperations(): Operation[] {
  const tags = ['schedules'];
  const variants = [
    {
      which: 'Variant A',
      path: '/api/profiles/{user}/{profile}/tasks/{task}/schedules',
      params: { ...taskParams.shape, profile: defaultProfile },
      body: variantASchedule,
      view: scheduleViewA,
      data: { parameters: { name: 'Ann' } },
      runBase: 'http://127.0.0.1:8080/api/profiles/alice/default/tasks/haiku/runs',
    },
    {
      which: 'Variant B',
      path: '/api/tasks/{user}/{profile}/{task}/schedules',
      params: taskParams.shape,
      body: variantBSchedule,
      view: scheduleViewB,
      data: { payload: { text: 'hello' } },
      runBase: 'http://127.0.0.1:8080/api/runs/alice/default/haiku',
    },
  ];
  const ops: Operation[] = [];
  for (const { which, path, params, body, view, data, runBase } of variants) {
    const one = `${path}/{schedule}`;
    const scheduleParams = pathParams({ ...params, schedule: scheduleName.meta({ description: 'The schedule’s name: at most 40 characters', example: 'weekdays' }) });
    const example = scheduleExample(data, runBase);
    const read = { description: 'The schedule', schema: view, examples: { weekdays: { summary: 'A cron schedule', value: example } } };
    const missing = errors({ 400: 'A bad name in the path (`path.schedule`)', 404: 'No such task or schedule' });
    const bodies: Record<string, Example> = {
      cron: { summary: 'On a cron expression', value: { cron: '30 8 * * 1-5', timezone: 'Europe/Paris', ...data } },
      every: { summary: 'Every two hours', value: { every: '2h', ...data } },
      paused: { summary: 'Paused', value: { every: '30s', paused: true } },
    };
    ops.push(
      {
        method: 'get',
        path,
        summary: `A task’s schedules (${which})`,
        tags,
        session: true,
        params: { path: pathParams(params) },
        responses: { 200: { description: 'By name', schema: z.object({ schedules: z.array(view) }) }, ...errors({ 400: 'A bad name in the path', 404: 'No such task' }) },
      },
      {
        method: 'put',
        path: one,
        summary: `Create or replace a schedule (${which})`,
        description: 'Exactly one of `cron` and `every`. Unknown fields are refused.',
        tags,
        session: true,
        params: { path: scheduleParams },
        body: { schema: body, examples: bodies },
        responses: {
          200: { ...read, description: 'Replaced' },
          201: { ...read, description: 'Created' },
          ...missing,
          ...errors({
            400: 'A bad field (named), or a cron expression Temporal refuses',
            404: 'No such task',
            409: ['`too_many_schedules`', 'too_many_schedules', 'task "default/haiku" has 20 schedules, the most it may have'],
          }),
        },
      },
      { method: 'get', path: one, summary: `Read a schedule (${which})`, tags, session: true, params: { path: scheduleParams }, responses: { 200: read, ...missing } },
      { method: 'delete', path: one, summary: `Delete a schedule (${which})`, tags, session: true, params: { path: scheduleParams }, responses: { 204: { description: 'Deleted' }, ...missing } },
      {
        method: 'post',
        path: `${one}/trigger`,
        summary: `Run a schedule now (${which})`,
        description: 'One run with the schedule’s trigger data, named by the time of the trigger.',
        tags,
        session: true,
        params: { path: scheduleParams },
        responses: {
          202: { description: 'The run’s URL', schema: runUrl, examples: { run: { summary: 'The run', value: { url: `${runBase}/weekdays-20261123T083000Z` } } } },
          ...missing,
        },
      },
    );
  }
  return ops;
}
