import type { Command } from 'commander';
import type { SignInLinkView } from '../../http/routes/sign-in/schema';
import { when, type Context } from './context';

/**
 * `ptr console`: `POST /api/sign-in-links`, a one-time link that opens the web console signed in as the CLI's user
 * (docs/console.md). The link alone on stdout (so `xdg-open "$(ptr console)"` opens it); how long it works on stderr.
 */
export function consoleCommands(program: Command, ctx: Context) {
  program
    .command('console')
    .description('print a one-time link that opens the web console signed in as you (it works once, within 10 minutes)')
    .action(async () => {
      const body: SignInLinkView = (await ctx.client().post('/api/sign-in-links', { json: {} })).body;
      ctx.stderr.write(`[ptr] open it in a browser: it signs you in once, until ${when(body.expires_at)} UTC\n`);
      ctx.print(body, () => body.url);
    });
}
