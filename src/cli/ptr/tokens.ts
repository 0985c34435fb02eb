import type { Command } from 'commander';
import type { CreatedTokenView, TokenView } from '../../http/routes/tokens/schema';
import { seg } from './client';
import { table, when, type Context } from './context';
import { collect } from './input';
import { UsageError } from './errors';

/**
 * `ptr token create|list|revoke`: `POST|GET /api/tokens/~`, `DELETE /api/tokens/~/<name>` (docs/tokens.md). `create`
 * prints the token on stdout (alone, so `$(ptr token create x)` captures it) and the warning that it is shown once on
 * stderr.
 */
export function tokenCommands(program: Command, ctx: Context) {
  const token = program.command('token').alias('tokens').description('make, list and revoke access tokens (for MCP clients and scripts)');

  token
    .command('create <name>')
    .description('make an access token; it is printed once and never shown again')
    .option('-p, --profile <name>', 'a profile it may act in (repeatable; default: every profile)', collect)
    .option('-s, --scope <scope>', 'tasks:read, runs:trigger, runs:read or runs:control (repeatable; default: all four)', collect)
    .option('--days <n>', 'days until it expires (1 to 365; default 90)')
    .action(async (name: string, opts: { profile?: string[]; scope?: string[]; days?: string }) => {
      if (opts.days !== undefined && !/^\d+$/.test(opts.days)) throw new UsageError(`--days: expected a whole number of days, got "${opts.days}"`);
      const days = opts.days === undefined ? undefined : Number(opts.days);
      const json = { name, ...(opts.profile ? { profiles: opts.profile } : {}), ...(opts.scope ? { scopes: opts.scope } : {}), ...(days === undefined ? {} : { expires_in_days: days }) };
      const body: CreatedTokenView = (await ctx.client().post('/api/tokens/~', { json })).body;
      ctx.stderr.write(`[ptr] token "${body.name}" (${body.scopes.join(', ')}; ${body.profiles ? `profiles ${body.profiles.join(', ')}` : 'every profile'}; expires ${when(body.expires_at)} UTC)\n`);
      ctx.stderr.write('[ptr] this is the only time the token is shown: keep it now, as you would a password\n');
      ctx.print(body, () => body.token);
    });

  token
    .command('list')
    .description('list your access tokens (never the tokens themselves)')
    .action(async () => {
      const tokens: TokenView[] = (await ctx.client().get('/api/tokens/~')).body;
      const now = Date.now();
      ctx.print(tokens, () =>
        tokens.length === 0
          ? 'no tokens'
          : table([
              ['NAME', 'PROFILES', 'SCOPES', 'EXPIRES', 'LAST USED'],
              ...tokens.map((t) => [
                t.name,
                t.profiles ? t.profiles.join(',') : '*',
                t.scopes.join(','),
                Date.parse(t.expires_at) <= now ? `expired ${when(t.expires_at)}` : when(t.expires_at),
                when(t.last_used_at),
              ]),
            ]),
      );
    });

  token
    .command('revoke <name>')
    .description('revoke an access token (it stops working within seconds, SESSION_CACHE_MS)')
    .action(async (name: string) => {
      await ctx.client().delete(`/api/tokens/~/${seg(name)}`);
      ctx.print({ revoked: true, token: name }, () => `revoked token ${name}`);
    });
}
