import type { Context } from 'koa';
import { AppError, badRequest, notFound } from '../../../errors';
import { checkMcpUrl, discoverTools, displayUrl, mcpClientOptions, McpUnreachable, type McpClientOptions, type McpOAuthClient } from '../../../mcp';
import { oauthSecrets } from '../../../mcp/oauth';
import { redactor } from '../../../mcp/errors';
import { checkMcpInstallable, getMcpInstall, installMcp, listingProblem, openMcpConnection, saveMcpListing, type McpListing } from '../../../store/mcp-installs';
import type { AppDeps } from '../../deps';
import { presentMcpInstall } from '../../presenters/mcp-installation';
import { parse } from '../../validate';
import { mcpInstallBody, type McpInstallBody } from './schema';

/**
 * Installing an MCP server and listing its tools again (docs/mcp.md). The URL passes the network guard for MCP servers
 * (MCP_ALLOWLIST) before anything connects; the server is then asked for its tools within MCP_CONNECT_TIMEOUT_MS.
 */
export function mcpInstallHandlers(deps: AppDeps) {
  const { models } = deps.db;
  // made on first use: an app that never installs an MCP server opens no agent
  let options: McpClientOptions | undefined;
  const clientOptions = () => (options ??= mcpClientOptions(deps.config));

  /**
   * Throws 400 naming `mcp.url` (or `mcp.oauth.token_url`) when the guard refuses the URL, 400 `mcp_unreachable` when
   * the server cannot be used (`mcp.oauth: …` when no OAuth token could be obtained).
   */
  async function listTools(url: URL, headers: Record<string, string>, oauth?: McpOAuthClient): Promise<McpListing> {
    const verdict = checkMcpUrl(url, clientOptions().policy);
    if (!verdict.allowed) throw badRequest(`mcp.url: ${verdict.reason}`);
    if (oauth?.tokenUrl) {
      const tokenVerdict = checkMcpUrl(new URL(oauth.tokenUrl), clientOptions().policy);
      if (!tokenVerdict.allowed) throw badRequest(`mcp.oauth.token_url: ${tokenVerdict.reason}`);
    }
    let listing: McpListing;
    try {
      listing = await discoverTools({ url: url.toString(), headers, ...(oauth ? { oauth } : {}) }, clientOptions());
    } catch (err) {
      // discoverTools leaves header values and OAuth secrets out of its messages; here the URL's secret parts go too, whatever threw.
      const redact = redactor({ ...headers, ...oauthSecrets(url.toString(), oauth) });
      const message = redactUrl(redact(err instanceof Error ? err.message : String(err)), url);
      if (err instanceof McpUnreachable && err.reason === 'guard') throw badRequest(`mcp.url: ${message}`);
      if (err instanceof McpUnreachable && err.reason === 'oauth') throw new AppError(400, 'mcp_unreachable', `mcp.oauth: ${message}`);
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
    const oauth = body.mcp.oauth ? oauthClient(body.mcp.oauth) : undefined;
    const listing = await listTools(body.mcp.url, headers, oauth);
    const result = await installMcp(models, deps.keyring, {
      ...ref,
      url: body.mcp.url,
      headers,
      oauth: oauth ?? null,
      listing,
      allowedTools: body.settings?.tools ?? null,
      approval: body.settings?.approval ?? 'destructive',
      sampling: body.settings?.sampling ?? false,
      allowUpdate: body.allow_update,
    });
    ctx.status = result.created ? 201 : 200;
    ctx.body = presentMcpInstall(result.install);
  }

  /** `POST …/installations/<name>/refresh`: the install with its tools listed again. */
  async function refresh(ctx: Context, owner: string, profile: string, name: string) {
    const install = await getMcpInstall(models, { owner, profile, name });
    const connection = openMcpConnection(deps.keyring, install);
    const listing = await listTools(new URL(connection.url), connection.headers, connection.oauth);
    const saved = await saveMcpListing(models, deps.keyring, install, listing);
    if (!saved) throw notFound(`install "${profile}/${name}"`);
    ctx.body = presentMcpInstall(saved);
  }

  return { install, refresh };
}

function oauthClient(oauth: NonNullable<McpInstallBody['mcp']['oauth']>): McpOAuthClient {
  return {
    clientId: oauth.client_id,
    ...(oauth.token_url ? { tokenUrl: oauth.token_url.toString() } : {}),
    ...(oauth.client_secret ? { clientSecret: oauth.client_secret } : {}),
    ...(oauth.private_key ? { privateKey: oauth.private_key } : {}),
    ...(oauth.scope ? { scope: oauth.scope } : {}),
  };
}

/** The message without the URL's user info or query (discoverTools shows URLs without them, but may quote one). */
function redactUrl(message: string, url: URL): string {
  const secrets = [url.toString(), url.username, url.password, url.search.slice(1)].filter((s) => s.length >= 4);
  let out = message;
  for (const secret of secrets.sort((a, b) => b.length - a.length)) out = out.split(secret).join(secret === url.toString() ? displayUrl(url) : '[redacted]');
  return out;
}
