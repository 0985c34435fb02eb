import { z } from 'zod';
import type { InstallView, ServletInstallView } from '../../store/installations';
import { presentMcpInstall, mcpInstallView } from './mcp-installation';
import { servletMeta } from './servlet';
import { timestamp } from './timestamp';

/** A servlet install as the list and an install answer show it (the OpenAPI document's `Install`). */
export const servletInstallView = z
  .object({
    name: z.string(),
    settings: z.object({
      config: z.record(z.string(), z.string()),
      permissions: z.object({ network: z.object({ domains: z.array(z.string()) }), filesystem: z.object({ volumes: z.object({}) }) }),
      approval: z.union([z.literal('*'), z.array(z.string())]).optional(),
    }),
    binding: z.object({ id: z.string(), contentAddress: z.string() }),
    servlet: z.object({ slug: z.string(), has_client: z.boolean(), meta: servletMeta }),
    created_at: timestamp,
    modified_at: timestamp,
  })
  .meta({ id: 'Install' });

/** Any install, as the list shows it: a servlet's (`Install`) or an MCP server's (`McpInstall`). */
export const installView = z.union([servletInstallView, mcpInstallView]);
export type PresentedInstall = z.infer<typeof installView>;

/**
 * An install as the Python client reads it from `GET /api/profiles/~/<profile>/installations`. It carries the
 * opened configuration (the client runs tools locally with it), so it is only ever shown to the profile's owner.
 * Hosts: null (any host outside the blocklist) is shown as ["*"]. Servlets never get a file system. `approval` is
 * shown only when set, so installs that never use it keep the hosted service's shape byte for byte.
 */
export function presentInstall(view: InstallView): PresentedInstall {
  return view.kind === 'mcp' ? presentMcpInstall(view.install) : presentServletInstall(view);
}

function presentServletInstall({ install, servlet, config }: ServletInstallView): z.infer<typeof servletInstallView> {
  return {
    name: install.name,
    settings: {
      config,
      permissions: {
        network: { domains: install.domains ?? ['*'] },
        filesystem: { volumes: {} },
      },
      ...(install.approval ? { approval: install.approval } : {}),
    },
    binding: { id: String(install._id), contentAddress: servlet.content_address },
    servlet: {
      slug: `${servlet.owner}/${servlet.name}`,
      has_client: false,
      meta: { description: servlet.description, schema: { tools: servlet.schema.tools } },
    },
    created_at: install.created_at.toISOString(),
    modified_at: install.modified_at.toISOString(),
  };
}
