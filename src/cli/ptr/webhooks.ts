import type { Command } from 'commander';
import { seg } from './client';
import { table, when, type Context } from './context';

/** `ptr webhook deliveries <task>`: the latest attempts to deliver a task's webhook, newest first (docs/webhooks.md). */
export function webhookCommands(program: Command, ctx: Context) {
  const webhook = program.command('webhook').alias('webhooks').description("a task's webhook deliveries");

  webhook
    .command('deliveries <task>')
    .description("the task's latest 100 delivery attempts, newest first: the receiver's status, or why none")
    .option('-p, --profile <name>', 'the profile', 'default')
    .action(async (task: string, opts: { profile: string }) => {
      const { body } = await ctx.client().get(`/api/tasks/~/${seg(opts.profile)}/${seg(task)}/webhook/deliveries`);
      const deliveries: any[] = body?.deliveries ?? [];
      ctx.print(body, () =>
        deliveries.length === 0
          ? `no webhook deliveries for task ${task}`
          : table([['AT', 'RUN', 'ATTEMPT', 'STATUS', 'ERROR'], ...deliveries.map((d) => [when(d.at), d.run, String(d.attempt), String(d.status), d.error ?? ''])]),
      );
    });
}
