import type { Context } from 'koa';
import { AppError, badRequest, notFound } from '../../../errors';
import { checkMcpUrl, discoverTools, displayUrl, mcpClientOptions, McpUnreachable, type McpClientOptions } from '../../../mcp';
import { redactor } from '../../../mcp/errors';
import { checkMcpInstallable, getMcpInstall, installMcp, listingProblem, openMcpConnection, saveMcpListing, type McpListing } from '../../../store/mcp-installs';
import type { AppDeps } from '../../deps';
import { presentMcpInstall } from '../../presenters/mcp-installation';
import { parse } from '../../validate';
import { mcpInstallBody } from './schema';

/**
 * Installing an MCP server and listing its tools again (docs/mcp.md). The URL passes the network guard for MCP servers
 * (MCP_ALLOWLIST) before anything connects; the server is then asked for its tools within MCP_CONNECT_TIMEOUT_MS.
 */
export function mcpInstallHandlers(deps: AppDeps) {
  const { models } = deps.db;
  // made on first use: an app that never installs an MCP server opens no agent
  let options: McpClientOptions | undefined;
  const clientOptions = () => (options ??= mcpClientOptions(deps.config));

  /** Throws 400 naming `mcp.url` when the guard refuses the URL, 400 `mcp_unreachable` when the server cannot be used. */
  async function listTools(url: URL, headers: Record<string, string>): Promise<McpListing> {
    const verdict = checkMcpUrl(url, clientOptions().policy);
    if (!verdict.allowed) throw badRequest(`mcp.url: ${verdict.reason}`);
    let listing: McpListing;
    try {
      listing = await discoverTools({ url: url.toString(), headers }, clientOptions());
    } catch (err) {
      // discoverTools leaves header values out of its messages; here the URL's secret parts go too, whatever threw.
      const message = redactUrl(redactor(headers)(err instanceof Error ? err.message : String(err)), url);
      if (err instanceof McpUnreachable && err.reason === 'guard') throw badRequest(`mcp.url: ${message}`);
      if (err instanceof McpUnreachable) throw new AppError(400, 'mcp_unreachable', `mcp.url: ${message}`);
      deps.logger.warn({ err: { name: (err as Error)?.name, message }, url: displayUrl(url) }, "listing an MCP server's tools failed unexpectedly");
      throw new AppError(400, 'mcp_unreachable', `mcp.url: the MCP server at ${displayUrl(url)} cannot be used: its answers could not be read`);
    }
    const problem = listingProblem(listing);
    if (problem) throw new AppError(400, 'mcp_unreachable', `mcp.url: the MCP server at ${displayUrl(url)} cannot be used: ${problem}`);
    return listing;
  }

  /** `POST …/installations` with `mcp`: 201 created, 200 replaced. */
  async function install(ctx: Context, owner: string, profile: string) {
    const body = parse(mcpInstallBody, ctx.request.body);
    const ref = { owner, profile, name: body.name };
    await checkMcpInstallable(models, ref, body.allow_update);
    const headers = body.mcp.headers ?? {};
    const listing = await listTools(body.mcp.url, headers);
    const result = await installMcp(models, deps.keyring, {
      ...ref,
      url: body.mcp.url,
      headers,
      listing,
      allowedTools: body.settings?.tools ?? null,
      approval: body.settings?.approval ?? 'destructive',
      allowUpdate: body.allow_update,
    });
    ctx.status = result.created ? 201 : 200;
    ctx.body = presentMcpInstall(result.install);
  }

  /** `POST …/installations/<name>/refresh`: the install with its tools listed again. */
  async function refresh(ctx: Context, owner: string, profile: string, name: string) {
    const install = await getMcpInstall(models, { owner, profile, name });
    const connection = openMcpConnection(deps.keyring, install);
    const listing = await listTools(new URL(connection.url), connection.headers);
    const saved = await saveMcpListing(models, deps.keyring, install, listing);
    if (!saved) throw notFound(`install "${profile}/${name}"`);
    ctx.body = presentMcpInstall(saved);
  }

  return { install, refresh };
}

/** The message without the URL's user info or query (discoverTools shows URLs without them, but may quote one). */
function redactUrl(message: string, url: URL): string {
  const secrets = [url.toString(), url.username, url.password, url.search.slice(1)].filter((s) => s.length >= 4);
  let out = message;
  for (const secret of secrets.sort((a, b) => b.length - a.length)) out = out.split(secret).join(secret === url.toString() ? displayUrl(url) : '[redacted]');
  return out;
}
