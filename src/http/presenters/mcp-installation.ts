import { z } from 'zod';
import type { McpInstallRecord } from '../../store/mcp-installs';
import { timestamp } from './timestamp';

const annotations = z.object({
  title: z.string().optional(),
  readOnlyHint: z.boolean().optional(),
  destructiveHint: z.boolean().optional(),
  idempotentHint: z.boolean().optional(),
  openWorldHint: z.boolean().optional(),
});

/** A tool as the server listed it (the OpenAPI document's `McpTool`). */
export const mcpToolView = z
  .object({
    name: z.string(),
    title: z.string().optional(),
    description: z.string().optional(),
    inputSchema: z.record(z.string(), z.unknown()),
    outputSchema: z.record(z.string(), z.unknown()).optional(),
    annotations: annotations.optional(),
    execution: z.object({ taskSupport: z.enum(['forbidden', 'optional', 'required']).optional() }).optional(),
  })
  .meta({ id: 'McpTool' });

export const mcpApprovalView = z
  .union([z.literal('*'), z.literal('none'), z.literal('destructive'), z.array(z.string())])
  .meta({ description: '`"destructive"` (the default): calls of tools whose annotations do not say read-only or non-destructive wait for a decision' });

/**
 * An MCP install as the list and an install answer show it (the OpenAPI document's `McpInstall`): the fields the
 * Python client reads (`binding`, `servlet.slug`, `has_client`, `meta.remote` with a `description`), and `mcp`.
 */
export const mcpInstallView = z
  .object({
    name: z.string(),
    settings: z.object({
      tools: z.array(z.string()).optional(),
      approval: mcpApprovalView,
      sampling: z.boolean().meta({ description: 'The server may ask the run\'s model for an answer during a call (docs/mcp.md, "Sampling")' }),
    }),
    binding: z.object({ id: z.string(), contentAddress: z.null() }),
    servlet: z.object({
      slug: z.string().meta({ description: '`<owner>/<install>`' }),
      has_client: z.boolean(),
      meta: z.object({ description: z.string(), remote: z.object({ url: z.string() }) }),
    }),
    mcp: z.object({
      url: z.string().meta({ description: 'Without user info, query or fragment (they may hold secrets, and are stored sealed)' }),
      headers: z.array(z.string()).meta({ description: 'The names of the headers sent; their values are never shown' }),
      oauth: z
        .object({
          token_url: z.string().optional().meta({ description: 'Without user info, query or fragment; absent: discovered' }),
          client_id: z.string(),
          scope: z.string().optional(),
          auth: z.enum(['client_secret', 'private_key']).meta({ description: 'How the client authenticates (client_secret_basic/post, or private_key_jwt); the secret is never shown' }),
        })
        .optional()
        .meta({ description: 'OAuth client credentials, when the install has them' }),
      tools: z.array(mcpToolView),
      server: z.object({ name: z.string(), title: z.string().optional(), version: z.string().optional() }).nullable(),
      protocol_version: z.string().nullable(),
      listed_at: timestamp,
    }),
    created_at: timestamp,
    modified_at: timestamp,
  })
  .meta({ id: 'McpInstall' });
export type PresentedMcpInstall = z.infer<typeof mcpInstallView>;

const text = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : undefined);

/** What the Python client shows as the install's (one, remote) tool's description. */
function describeServer(install: McpInstallRecord): string {
  const info = install.mcp.server?.serverInfo;
  const name = text(info?.title) ?? text(info?.name);
  const version = text(info?.version);
  return `MCP server${name ? ` ${name}${version ? ` ${version}` : ''}` : ''} at ${install.mcp.url}`;
}

/** An MCP install for its owner: header names only, the URL without its secret parts. */
export function presentMcpInstall(install: McpInstallRecord): PresentedMcpInstall {
  const info = install.mcp.server?.serverInfo;
  return {
    name: install.name,
    settings: { ...(install.allowed_tools ? { tools: install.allowed_tools } : {}), approval: install.approval, sampling: install.sampling === true },
    binding: { id: String(install._id), contentAddress: null },
    servlet: {
      slug: `${install.owner}/${install.name}`,
      has_client: false,
      meta: { description: describeServer(install), remote: { url: install.mcp.url } },
    },
    mcp: {
      url: install.mcp.url,
      headers: install.mcp.header_names,
      ...(install.mcp.oauth
        ? {
            oauth: {
              ...(install.mcp.oauth.token_url ? { token_url: install.mcp.oauth.token_url } : {}),
              client_id: install.mcp.oauth.client_id,
              ...(install.mcp.oauth.scope ? { scope: install.mcp.oauth.scope } : {}),
              auth: install.mcp.oauth.auth,
            },
          }
        : {}),
      tools: install.mcp.tools,
      server: info ? { name: String(info.name ?? ''), ...(text(info.title) ? { title: text(info.title) } : {}), ...(text(info.version) ? { version: text(info.version) } : {}) } : null,
      protocol_version: install.mcp.server?.protocolVersion ?? null,
      listed_at: install.mcp.listed_at.toISOString(),
    },
    created_at: install.created_at.toISOString(),
    modified_at: install.modified_at.toISOString(),
  };
}
