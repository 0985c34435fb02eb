import type { Command } from 'commander';
import type { ProfileView } from '../../http/presenters/profile';
import { seg } from './client';
import { table, when, type Context } from './context';

/** `ptr profile list|create|delete`: `GET|POST|DELETE /api/profiles/~[/<name>]`. */
export function profileCommands(program: Command, ctx: Context) {
  const profile = program.command('profile').alias('profiles').description('list, create and delete your profiles');

  profile
    .command('list')
    .description('list your profiles')
    .action(async () => {
      const profiles: ProfileView[] = (await ctx.client().get('/api/profiles/~')).body;
      ctx.print(profiles, () =>
        profiles.length === 0
          ? 'no profiles'
          : table([
              ['NAME', 'PUBLIC', 'MODIFIED', 'DESCRIPTION'],
              ...profiles.map((p) => [String(p.slug).split('/').pop()!, p.is_public ? 'yes' : 'no', when(p.modified_at), p.description]),
            ]),
      );
    });

  profile
    .command('create <name>')
    .description('create a profile')
    .option('--description <text>', 'what the profile is for')
    .option('--public', 'anyone may read the profile (not its tasks or installs)')
    .action(async (name: string, opts: { description?: string; public?: boolean }) => {
      const { body } = await ctx.client().post(`/api/profiles/~/${seg(name)}`, {
        json: { ...(opts.description === undefined ? {} : { description: opts.description }), ...(opts.public ? { is_public: true } : {}) },
      });
      ctx.print(body, () => `created profile ${body.slug}`);
    });

  profile
    .command('delete <name>')
    .description('delete a profile (it must have no tasks; its servlet installs go with it)')
    .action(async (name: string) => {
      await ctx.client().delete(`/api/profiles/~/${seg(name)}`);
      ctx.print({ deleted: true, profile: name }, () => `deleted profile ${name}`);
    });
}
