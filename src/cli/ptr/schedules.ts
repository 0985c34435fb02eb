import type { Command } from 'commander';
import { seg } from './client';
import { table, when, type Context } from './context';
import { readObjectFile } from './input';

const PROFILE_OPTION = ['-p, --profile <name>', 'the profile', 'default'] as const;

/** What a schedule does, in a few words: `cron 30 8 * * 1-5 (Europe/Paris)`, `every 2h`; `paused` when it is. */
const scheduleText = (s: any) => `${s.cron ? `cron ${s.cron}${s.timezone ? ` (${s.timezone})` : ''}` : `every ${s.every}`}${s.paused ? ', paused' : ''}`;

const scheduleLines = (s: any): string[] => [
  `${s.name}: ${scheduleText(s)}`,
  `  next:     ${(s.next_action_times ?? []).map(when).join(', ') || '-'}`,
  `  data:     ${JSON.stringify(s.payload ?? s.parameters ?? {})}`,
  ...(s.recent_runs ?? []).map((r: any) => `  ran:      ${when(r.scheduled_at)} ${r.name}`),
  `  modified: ${when(s.modified_at)}`,
];

/**
 * `ptr schedule list|put|get|delete|trigger`: a task's schedules, `<task path>/schedules[/<schedule>]` on the
 * Variant B paths (docs/schedules.md). `put` takes the body as the API does, from a JSON or YAML file.
 */
export function scheduleCommands(program: Command, ctx: Context) {
  const schedule = program.command('schedule').alias('schedules').description("list, save, read, delete and trigger a task's schedules");
  const base = (profile: string, task: string) => `/api/tasks/~/${seg(profile)}/${seg(task)}/schedules`;

  schedule
    .command('list <task>')
    .description("list a task's schedules")
    .option(...PROFILE_OPTION)
    .action(async (task: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(base(opts.profile, task));
      const schedules: any[] = body?.schedules ?? [];
      ctx.print(body, () =>
        schedules.length === 0
          ? `no schedules for task ${task}`
          : table([['NAME', 'WHEN', 'NEXT', 'MODIFIED'], ...schedules.map((s) => [s.name, scheduleText(s), when(s.next_action_times?.[0]), when(s.modified_at)])]),
      );
    });

  schedule
    .command('put <task> <schedule>')
    .description('create or replace a schedule from a file (JSON or YAML, "-": standard input), e.g. {"every": "1h", "payload": {...}}')
    .option(...PROFILE_OPTION)
    .requiredOption('-f, --file <file>', 'the schedule: cron or every, timezone, paused, payload (docs/schedules.md)')
    .action(async (task: string, name: string, opts: { profile: string; file: string }) => {
      const res = await ctx.client().put(`${base(opts.profile, task)}/${seg(name)}`, { json: readObjectFile(opts.file) });
      ctx.print(res.body, () => `${res.status === 201 ? 'created' : 'replaced'} schedule ${name} of task ${task}: ${scheduleText(res.body)}`);
    });

  schedule
    .command('get <task> <schedule>')
    .description('show a schedule: when it acts next, its data, its recent runs')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(`${base(opts.profile, task)}/${seg(name)}`);
      ctx.print(body, () => scheduleLines(body));
    });

  schedule
    .command('delete <task> <schedule>')
    .description('delete a schedule (its runs stay)')
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      await ctx.client().delete(`${base(opts.profile, task)}/${seg(name)}`);
      ctx.print({ deleted: true, profile: opts.profile, task, schedule: name }, () => `deleted schedule ${name} of task ${task}`);
    });

  schedule
    .command('trigger <task> <schedule>')
    .description("start one run now with the schedule's data")
    .option(...PROFILE_OPTION)
    .action(async (task: string, name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().post(`${base(opts.profile, task)}/${seg(name)}/trigger`);
      ctx.print(body, () => `started: ${body.url}`);
    });
}
