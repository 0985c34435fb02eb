import fs from 'node:fs';
import type { Command } from 'commander';
import { seg } from './client';
import { table, type Context } from './context';
import { UsageError } from './errors';
import { collect, parsePairs } from './input';

/** An install's tool names: a servlet's as it described them, an MCP server's as listed (narrowed by `settings.tools`). */
export function toolsOfInstall(install: any): string[] {
  if (install?.mcp) {
    const listed: string[] = (install.mcp.tools ?? []).map((t: { name: string }) => t.name);
    const allowed: string[] | undefined = install.settings?.tools;
    return allowed ? listed.filter((name) => allowed.includes(name)) : listed;
  }
  return (install?.servlet?.meta?.schema?.tools ?? []).map((t: { name: string }) => t.name);
}

/** An install's `settings.approval` as a column: `*` (every tool), the tools named, `destructive`, or `-` (none waits). */
const approvalOf = (approval: unknown) =>
  approval === '*' || approval === 'destructive' ? approval : Array.isArray(approval) && approval.length > 0 ? approval.join(',') : '-';

/**
 * A profile's installs as a table. MCP installs show `mcp <url>` where a servlet install shows its servlet, and the
 * URL's host as the one host they reach.
 */
export async function printInstalls(ctx: Context, profile: string): Promise<void> {
  const { body } = await ctx.client().get(`/api/profiles/~/${seg(profile)}/installations`);
  const installs: any[] = body?.installs ?? [];
  const source = (i: any) => (i.mcp ? `mcp ${i.mcp.url}` : (i.servlet?.slug ?? '-'));
  const hosts = (i: any) => (i.mcp ? hostOf(i.mcp.url) : (i.settings?.permissions?.network?.domains ?? []).join(',') || 'none');
  ctx.print(body, () =>
    installs.length === 0
      ? `no installs in profile ${profile}`
      : table([
          ['NAME', 'SERVLET', 'HOSTS', 'APPROVAL', 'TOOLS'],
          ...installs.map((i) => [i.name, source(i), hosts(i), approvalOf(i.settings?.approval), toolsOfInstall(i).join(', ')]),
        ]),
  );
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return '-';
  }
};

/**
 * Headers from `--header K=V` and `--header-env K=VAR` (the value read from the variable VAR, so that it stays out of
 * the shell's history). Throws UsageError for a pair without `=`, an unset variable, or a header given twice.
 */
export function headersFrom(ctx: Context, pairs: string[] | undefined, fromEnv: string[] | undefined): Record<string, string> {
  const headers = parsePairs(pairs, '--header');
  for (const [name, variable] of Object.entries(parsePairs(fromEnv, '--header-env'))) {
    const value = ctx.env[variable];
    if (value === undefined) throw new UsageError(`--header-env ${name}=${variable}: the variable ${variable} is not set`);
    if (Object.keys(headers).some((h) => h.toLowerCase() === name.toLowerCase())) throw new UsageError(`--header-env ${name}: the header is given twice`);
    headers[name] = value;
  }
  return headers;
}

interface McpOptions {
  profile: string;
  url: string;
  header?: string[];
  headerEnv?: string[];
  oauthClientId?: string;
  oauthSecretEnv?: string;
  oauthKeyFile?: string;
  oauthTokenUrl?: string;
  oauthScope?: string;
  tool?: string[];
  approval?: string[];
  replace: boolean;
}

/** `ptr install mcp|refresh|list`: a profile's installs of MCP servers (docs/mcp.md); servlets are `ptr servlet install`. */
export function installCommands(program: Command, ctx: Context) {
  const install = program.command('install').description('install MCP servers into profiles, list its tools again, list installs');

  install
    .command('mcp <name>')
    .description('install the MCP server at --url into a profile as <name>; its tools are <name>__<tool>')
    .requiredOption('--url <url>', "the server's Streamable HTTP endpoint (https://, or http:// for a host in MCP_ALLOWLIST)")
    .option('-p, --profile <name>', 'the profile', 'default')
    .option('--header <name=value>', 'a header sent with every request (repeatable; the value lands in your shell history: prefer --header-env)', collect)
    .option('--header-env <name=VARIABLE>', 'a header whose value is the environment variable VARIABLE (repeatable)', collect)
    .option('--oauth-client-id <id>', 'OAuth client credentials: the client id (with --oauth-secret-env or --oauth-key-file)')
    .option('--oauth-secret-env <VARIABLE>', 'the OAuth client secret, from the environment variable VARIABLE (client_secret_basic)')
    .option('--oauth-key-file <path>', 'a PEM private key file for private_key_jwt, instead of a secret')
    .option('--oauth-token-url <url>', 'the token endpoint (default: discovered from the server)')
    .option('--oauth-scope <scope>', 'the scope asked for')
    .option('--tool <name>', 'offer only this tool to runs (repeatable; default: every tool)', collect)
    .option('--approval <tool>', 'a tool whose calls wait for approval; "*" all, "none" none (repeatable; default: "destructive", the tools not marked read-only or non-destructive)', collect)
    .option('--no-replace', 'fail (install_exists) instead of replacing an install of that name')
    .action(async (name: string, opts: McpOptions) => {
      const approval = opts.approval === undefined ? undefined : mcpApproval(opts.approval);
      const headers = headersFrom(ctx, opts.header, opts.headerEnv);
      const oauth = oauthFrom(ctx, opts);
      const body = {
        name,
        mcp: { url: opts.url, ...(Object.keys(headers).length > 0 ? { headers } : {}), ...(oauth ? { oauth } : {}) },
        settings: { ...(opts.tool ? { tools: opts.tool } : {}), ...(approval ? { approval } : {}) },
        allow_update: opts.replace,
      };
      const res = await ctx.client().post(`/api/profiles/~/${seg(opts.profile)}/installations`, { json: body });
      const tools = toolsOfInstall(res.body).map((t) => `${res.body.name}__${t}`);
      ctx.print(res.body, () => `${res.status === 201 ? 'installed' : 'replaced'} MCP server ${res.body.mcp?.url} as ${res.body.name} in profile ${opts.profile} (tools: ${tools.join(', ') || 'none'})`);
    });

  install
    .command('refresh <name>')
    .description("list the tools of the MCP install <name> again (its settings stay; a tool they name that is gone is not offered)")
    .option('-p, --profile <name>', 'the profile', 'default')
    .action(async (name: string, opts: { profile: string }) => {
      const res = await ctx.client().post(`/api/profiles/~/${seg(opts.profile)}/installations/${seg(name)}/refresh`, { json: {} });
      ctx.print(res.body, () => `listed the tools of ${res.body.name} again: ${toolsOfInstall(res.body).join(', ') || 'none'}`);
    });

  install
    .command('list')
    .description("list a profile's installs, servlets and MCP servers")
    .option('-p, --profile <name>', 'the profile', 'default')
    .action((opts: { profile: string }) => printInstalls(ctx, opts.profile));
}

/**
 * `mcp.oauth` from the `--oauth-*` options, or undefined when none is given: the secret is read from a variable and
 * the key from a file, so that neither lands in the shell's history. Throws UsageError for a missing variable or file.
 */
function oauthFrom(ctx: Context, opts: McpOptions): Record<string, string> | undefined {
  const given = [opts.oauthClientId, opts.oauthSecretEnv, opts.oauthKeyFile, opts.oauthTokenUrl, opts.oauthScope].some((v) => v !== undefined);
  if (!given) return undefined;
  if (opts.oauthClientId === undefined) throw new UsageError('--oauth-client-id is required with the other --oauth-* options');
  const oauth: Record<string, string> = { client_id: opts.oauthClientId };
  if (opts.oauthSecretEnv !== undefined) {
    const secret = ctx.env[opts.oauthSecretEnv];
    if (secret === undefined) throw new UsageError(`--oauth-secret-env ${opts.oauthSecretEnv}: the variable ${opts.oauthSecretEnv} is not set`);
    oauth.client_secret = secret;
  }
  if (opts.oauthKeyFile !== undefined) {
    try {
      oauth.private_key = fs.readFileSync(opts.oauthKeyFile, 'utf8');
    } catch {
      throw new UsageError(`--oauth-key-file ${opts.oauthKeyFile}: cannot read the file`);
    }
  }
  if (opts.oauthTokenUrl !== undefined) oauth.token_url = opts.oauthTokenUrl;
  if (opts.oauthScope !== undefined) oauth.scope = opts.oauthScope;
  return oauth;
}

/** `--approval` values as the API takes them: a keyword alone, or tool names. */
function mcpApproval(values: string[]): string | string[] {
  const keyword = values.find((v) => v === '*' || v === 'none' || v === 'destructive');
  if (keyword === undefined) return values;
  if (values.length > 1) throw new UsageError(`--approval ${keyword} cannot be combined with other values`);
  return keyword;
}
