import type { Command } from 'commander';
import { sessionHint } from '../../store/sessions';
import { createClient } from './client';
import type { Context } from './context';
import { normalizeOrigin, updateConfigFile } from './settings';

/** The origin given now (`--origin`, MCP_RUN_ORIGIN), to save with a session; else none. */
const originGiven = (ctx: Context) => (ctx.settings().from.origin === 'flag' || ctx.settings().from.origin === 'env' ? ctx.settings().origin : undefined);

/**
 * Where the CLI's session and origin come from: `ptr session create` (local, as `npm run session` does), `ptr
 * login` / `logout`, `ptr config show|set-origin`, and `ptr whoami`.
 */
export function accountCommands(program: Command, ctx: Context) {
  program
    .command('session')
    .description('sessions (local: needs the database, as `npm run session` does)')
    .command('create')
    .description("create a session for a user (and the user if new) and save it in the config file, with the API's address")
    .requiredOption('-u, --user <name>', 'the user')
    .option('--no-save', 'print the session only; leave the config file as it is')
    .action(async (opts: { user: string; save: boolean }) => {
      // Required here, not imported above: the database driver costs about a second of start-up to every command.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { createLocalSession } = require('./local-session') as typeof import('./local-session');
      const created = await createLocalSession(opts.user);
      // The API of the database the session is in, when nothing names another: PUBLIC_URL, or the dev stack's.
      const origin = originGiven(ctx) ?? (created.apiUrl ? normalizeOrigin(created.apiUrl, 'PUBLIC_URL') : undefined);
      const file = ctx.settings().configPath;
      if (opts.save) updateConfigFile(file, { session: created.id, ...(origin ? { origin } : {}) });
      ctx.print({ username: opts.user, session: created.id, expires_at: created.expires_at.toISOString(), saved_to: opts.save ? file : null }, () => [
        `Session: ${created.id}`,
        `Expires: ${created.expires_at.toISOString()}`,
        ...(opts.save ? [`Saved to ${file}${origin ? ` (origin ${origin})` : ''}`] : []),
      ]);
    });

  program
    .command('login')
    .description('check a session against the API and save it (and --origin) in the config file')
    .requiredOption('-s, --session <id>', 'the session id ("ptr/<user>/…")')
    .action(async (opts: { session: string }) => {
      const { origin, configPath } = ctx.settings();
      const { body } = await createClient({ origin, session: opts.session }).get('/api/users/~');
      updateConfigFile(configPath, { session: opts.session, ...(originGiven(ctx) ? { origin } : {}) });
      ctx.print({ username: body.username, origin, saved_to: configPath }, () => `signed in as ${body.username} at ${origin}; saved to ${configPath}`);
    });

  program
    .command('logout')
    .description('remove the session from the config file (it stays valid until revoked or expired)')
    .action(() => {
      const file = ctx.settings().configPath;
      updateConfigFile(file, { session: undefined });
      ctx.print({ saved_to: file }, () => `removed the session from ${file}`);
    });

  program
    .command('whoami')
    .description('the user of the session, as the API sees it')
    .action(async () => {
      const { body } = await ctx.client().get('/api/users/~');
      ctx.print(body, () => `${body.username} at ${ctx.settings().origin}`);
    });

  const config = program.command('config').description('the config file ($XDG_CONFIG_HOME/ptr/config.json, or PTR_CONFIG)');
  config
    .command('show')
    .description('where the origin and session come from (the session by its last characters)')
    .action(() => {
      const s = ctx.settings();
      // By its hint, as `npm run session -- list` shows it: the session is a credential.
      const session = s.session ? `…${sessionHint(s.session)}` : null;
      const doc = { config_path: s.configPath, origin: s.origin, origin_from: s.from.origin, origin_why: s.originWhy ?? null, session, session_from: s.from.session ?? null };
      ctx.print(doc, () => [`config:  ${s.configPath}`, `origin:  ${s.origin} (from ${s.from.origin}${s.originWhy ? `: ${s.originWhy}` : ''})`, `session: ${session ? `${session} (from ${s.from.session})` : 'none'}`]);
    });
  config
    .command('set-origin <url>')
    .description("save the API's address, e.g. http://127.0.0.1:8080")
    .action((url: string) => {
      const origin = normalizeOrigin(url, 'url');
      const file = ctx.settings().configPath;
      updateConfigFile(file, { origin });
      ctx.print({ origin, saved_to: file }, () => `origin ${origin} saved to ${file}`);
    });
}
