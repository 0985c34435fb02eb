import type { InstallView } from '../../store/installations';

/**
 * An install as the Python client reads it from `GET /api/profiles/~/<profile>/installations`. It carries the
 * opened configuration (the client runs tools locally with it), so it is only ever shown to the profile's owner.
 * Hosts: null (any host outside the blocklist) is shown as ["*"]. Servlets never get a file system. `approval` is
 * shown only when set, so installs that never use it keep the hosted service's shape byte for byte.
 */
export function presentInstall({ install, servlet, config }: InstallView) {
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
