import path from 'node:path';
import type { Command } from 'commander';
import type { ServletView } from '../../http/presenters/servlet';
import { seg } from './client';
import { table, when, type Context } from './context';
import { UsageError } from './errors';
import { collect, parsePairs, readInput } from './input';
import { printInstalls } from './installs';

const toolsOf = (servlet: any): string[] => (servlet?.meta?.schema?.tools ?? []).map((t: { name: string }) => t.name);


interface InstallOptions {
  profile: string;
  name?: string;
  config?: string[];
  domain?: string[];
  network: boolean;
  approval?: string[];
  replace: boolean;
}

/**
 * `ptr servlet publish|list|search|delete` (the library, `/api/servlets/~/<servlet>`) and `ptr servlet
 * install|installs|uninstall` (a profile's installs, `/api/profiles/~/<profile>/installations`), docs/servlets.md.
 */
export function servletCommands(program: Command, ctx: Context) {
  const servlet = program.command('servlet').alias('servlets').description('publish servlets (WebAssembly tools) and install them into profiles');

  servlet
    .command('publish <name> <file>')
    .description('publish a .wasm module as your servlet <name> (replacing the module if it exists)')
    .option('--description <text>', 'what the servlet does')
    .option('--public', 'anyone may find and install it')
    .option('--private', 'only you may see it (the default for a new servlet)')
    .action(async (name: string, file: string, opts: { description?: string; public?: boolean; private?: boolean }) => {
      if (opts.public && opts.private) throw new UsageError('--public and --private exclude each other');
      const bytes = readInput(file);
      const visibility = opts.public ? 'public' : opts.private ? 'private' : undefined;
      const res = await ctx.client().put(`/api/servlets/~/${seg(name)}`, {
        bytes,
        contentType: 'application/wasm',
        query: { description: opts.description, visibility },
      });
      const tools = toolsOf(res.body);
      ctx.print(res.body, () => `${res.status === 201 ? 'published' : 'replaced'} servlet ${res.body.slug} from ${path.basename(file)} (${res.body.visibility}; tools: ${tools.join(', ') || 'none'})`);
    });

  servlet
    .command('list')
    .description('list your servlets')
    .action(async () => {
      const servlets: ServletView[] = (await ctx.client().get('/api/servlets/~')).body;
      ctx.print(servlets, () =>
        servlets.length === 0
          ? 'no servlets'
          : table([
              ['SERVLET', 'VISIBILITY', 'INSTALLS', 'MODIFIED', 'TOOLS'],
              ...servlets.map((s) => [s.slug, s.visibility, String(s.installation_count), when(s.modified_at), toolsOf(s).join(', ')]),
            ]),
      );
    });

  servlet
    .command('search [text]')
    .description("find servlets to install: public ones of every user and your own, by name, description or tool name (GET /api/servlets?q=)")
    .action(async (text: string | undefined) => {
      const servlets: ServletView[] = (await ctx.client().get('/api/servlets', { query: { q: text } })).body;
      ctx.print(servlets, () =>
        servlets.length === 0
          ? `no servlets${text ? ` matching "${text}"` : ''}`
          : table([
              ['SERVLET', 'INSTALLS', 'TOOLS', 'DESCRIPTION'],
              ...servlets.map((s) => [s.slug, String(s.installation_count), toolsOf(s).join(', '), s.meta?.description ?? '']),
            ]),
      );
    });

  servlet
    .command('delete <name>')
    .description('delete your servlet <name>, and every install of it')
    .action(async (name: string) => {
      await ctx.client().delete(`/api/servlets/~/${seg(name)}`);
      ctx.print({ deleted: true, servlet: name }, () => `deleted servlet ${name}`);
    });

  servlet
    .command('install <servlet>')
    .description('install a servlet ("<owner>/<servlet>", or "<servlet>" for your own) into a profile')
    .option('-p, --profile <name>', 'the profile', 'default')
    .option('--name <name>', "the install's name; its tools are <name>__<tool> (default: the servlet's name)")
    .option('--config <key=value>', 'configuration given to the servlet (repeatable)', collect)
    .option('--domain <host>', 'a host the servlet may reach, globs such as *.example.com allowed (repeatable; default: any)', collect)
    .option('--no-network', 'the servlet may reach no host')
    .option('--approval <tool>', 'a tool whose calls wait for approval, "*" for all (repeatable)', collect)
    .option('--no-replace', 'fail (install_exists) instead of replacing an install of that name')
    .action(async (slug: string, opts: InstallOptions) => {
      if (!opts.network && opts.domain) throw new UsageError('--domain and --no-network exclude each other');
      const approval = opts.approval?.includes('*') ? '*' : opts.approval;
      const body = {
        servlet_slug: slug.includes('/') ? slug : `~/${slug}`,
        ...(opts.name ? { name: opts.name } : {}),
        settings: {
          config: parsePairs(opts.config, '--config'),
          ...(opts.network ? (opts.domain ? { network: { domains: opts.domain } } : {}) : { network: { domains: [] } }),
          ...(approval ? { approval } : {}),
        },
        allow_update: opts.replace,
      };
      const res = await ctx.client().post(`/api/profiles/~/${seg(opts.profile)}/installations`, { json: body });
      const tools = toolsOf(res.body.servlet).map((t) => `${res.body.name}__${t}`);
      ctx.print(res.body, () => `${res.status === 201 ? 'installed' : 'replaced'} ${res.body.servlet?.slug} as ${res.body.name} in profile ${opts.profile} (tools: ${tools.join(', ') || 'none'})`);
    });

  servlet
    .command('installs')
    .description("list a profile's installs (servlets and MCP servers)")
    .option('-p, --profile <name>', 'the profile', 'default')
    .action((opts: { profile: string }) => printInstalls(ctx, opts.profile));

  servlet
    .command('uninstall <name>')
    .description('remove the install <name> from a profile')
    .option('-p, --profile <name>', 'the profile', 'default')
    .action(async (name: string, opts: { profile: string }) => {
      await ctx.client().delete(`/api/profiles/~/${seg(opts.profile)}/installations/${seg(name)}`);
      ctx.print({ deleted: true, profile: opts.profile, install: name }, () => `uninstalled ${name} from profile ${opts.profile}`);
    });
}
