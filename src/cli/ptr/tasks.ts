import type { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import type { TaskView } from '../../http/presenters/task';
import type { TaskWarning } from '../../http/routes/tasks/schema';
import { seg } from './client';
import { table, when, type Context } from './context';
import { readObjectFile } from './input';

const PROFILE_HELP = 'the profile';

/** The runner and model of a task as reads present it. */
const modelOf = (task: TaskView) => `${task.runner} ${task[task.runner]?.model ?? ''}`.trim();

/**
 * `ptr task list|create|update|get|delete`, on the Variant B paths (`/api/tasks/~/<profile>/<task>`), which reach
 * every profile, `default` (where Variant A tasks live) included. A task file is the body of the PUT as the API
 * takes it (docs/users-profiles-tasks.md, "Task bodies"), in YAML or JSON.
 */
export function taskCommands(program: Command, ctx: Context) {
  const task = program.command('task').alias('tasks').description('list, create, update, read and delete tasks');
  const taskPath = (profile: string, name: string) => `/api/tasks/~/${seg(profile)}/${seg(name)}`;

  task
    .command('list')
    .description('list the tasks of one profile, or of every profile')
    .option('-p, --profile <name>', 'only this profile (default: every profile)')
    .option('--deprecated', 'only the tasks on a model with an announced end of life: those that will stop working')
    .action(async (opts: { profile?: string; deprecated?: boolean }) => {
      const path = opts.profile === undefined ? '/api/tasks/~' : `/api/tasks/~/${seg(opts.profile)}`;
      const tasks: TaskView[] = (await ctx.client().get(path, { query: { deprecated: opts.deprecated ? 'true' : undefined } })).body;
      ctx.print(tasks, () =>
        tasks.length === 0
          ? opts.deprecated
            ? 'no tasks on a deprecated model'
            : 'no tasks'
          : table([
              ['TASK', 'RUNNER', 'MODIFIED'],
              ...tasks.map((t) => [t.slug.split('/').slice(1).join('/'), modelOf(t), when(t.modified_at)]),
            ]),
      );
    });

  const save = (mode: 'create' | 'update') => async (name: string, opts: { profile: string; file: string }) => {
    const body = readObjectFile(opts.file);
    const client = ctx.client();
    // PUT creates or replaces: `update` first checks the task is there, so a typo in its name creates nothing.
    if (mode === 'update') await client.get(taskPath(opts.profile, name));
    const res = await client.put(taskPath(opts.profile, name), { json: body });
    // On stderr, --json or not: the save went through, and stdout stays the task.
    for (const w of (res.body.warnings ?? []) as TaskWarning[]) ctx.stderr.write(`warning: ${w.field}: ${w.message}\n`);
    ctx.print(res.body, () => {
      const lines = [`${res.status === 201 ? 'created' : 'updated'} task ${res.body.slug} (${modelOf(res.body)})`];
      if (res.body.webhook?.secret) lines.push(`webhook secret (shown this once): ${res.body.webhook.secret}`);
      return lines;
    });
  };
  for (const mode of ['create', 'update'] as const) {
    task
      .command(`${mode} <name>`)
      .description(mode === 'create' ? 'create a task (or replace it) from a YAML or JSON file' : 'replace an existing task from a YAML or JSON file')
      .requiredOption('-f, --file <file>', 'the task body as the API takes it, YAML or JSON ("-": standard input)')
      .option('-p, --profile <name>', PROFILE_HELP, 'default')
      .action(save(mode));
  }

  task
    .command('get <name>')
    .description('show a task (as YAML; --json for JSON)')
    .option('-p, --profile <name>', PROFILE_HELP, 'default')
    .action(async (name: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(taskPath(opts.profile, name));
      ctx.print(body, () => toYaml(body).trimEnd());
    });

  task
    .command('delete <name>')
    .description('delete a task, cancelling its live runs and deleting all its runs')
    .option('-p, --profile <name>', PROFILE_HELP, 'default')
    .action(async (name: string, opts: { profile: string }) => {
      await ctx.client().delete(taskPath(opts.profile, name));
      ctx.print({ deleted: true, profile: opts.profile, task: name }, () => `deleted task ${opts.profile}/${name}`);
    });
}
