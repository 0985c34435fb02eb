import type { Command } from 'commander';
import { seg } from './client';
import type { Context } from './context';

const PROFILE_OPTION = ['-p, --profile <name>', 'the profile', 'default'] as const;

/**
 * `ptr signed create|revoke|revoke-all`: a task's signed URLs, the credential for triggering it without a session
 * (docs/runs.md, "Signed URLs"). `create` prints the URL: keep it secret.
 */
export function signedCommands(program: Command, ctx: Context) {
  const signed = program.command('signed').alias('signed-url').description("issue and revoke a task's signed URLs (triggering without a session)");
  const base = (profile: string, task: string) => `/api/tasks/~/${seg(profile)}/${seg(task)}/signed`;

  signed
    .command('create <task>')
    .description('issue a signed URL for the task: POST JSON to it (header run-id: <run>) to start a run')
    .option(...PROFILE_OPTION)
    .action(async (task: string, opts: { profile: string }) => {
      const { body } = await ctx.client().post(base(opts.profile, task));
      ctx.print(body, () => body.url);
    });

  signed
    .command('revoke <task> <url>')
    .description('revoke one signed URL of the task')
    .option(...PROFILE_OPTION)
    .action(async (task: string, url: string, opts: { profile: string }) => {
      await ctx.client().post(`${base(opts.profile, task)}/revoke`, { json: { url } });
      ctx.print({ revoked: true, profile: opts.profile, task }, () => `revoked the signed URL of task ${task}`);
    });

  signed
    .command('revoke-all <task>')
    .description('revoke every signed URL of the task issued so far (later ones work)')
    .option(...PROFILE_OPTION)
    .action(async (task: string, opts: { profile: string }) => {
      await ctx.client().delete(base(opts.profile, task));
      ctx.print({ revoked: 'all', profile: opts.profile, task }, () => `revoked every signed URL of task ${task} issued so far`);
    });
}
