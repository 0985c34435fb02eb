import { badRequest, conflict, notFound } from '../errors';
import { markInstallsChanged } from './install-changes';
import { writeInstall } from './install-writes';
import type { InstallationDoc, Models } from './models';
import { loadModule } from './modules';
import { getProfile } from './profiles';
import { fromMcpDoc, isMcpInstall, offeredMcpTools, type McpInstallRecord, type McpToolRecord } from './mcp-installs';
import { openJson, sealJson, type Keyring, type SealedSecret } from './secrets';
import { findServlet, findVisibleServlet, fromServletDoc, type ServletRecord, type ServletRef } from './servlets';

/** `"*"`: every tool of the servlet; else the names (as its schema gives them) of the tools that need approval. */
export type ToolApproval = '*' | string[];

/** What every install stores, servlet or MCP (models.ts). */
export type InstallBase = Omit<InstallationDoc, 'config' | 'domains' | 'approval' | 'servlet_owner' | 'servlet_name' | 'mcp' | 'allowed_tools' | 'sampling'>;

/**
 * A servlet install as stored (models.ts's schema), with the types its mixed and sealed fields hold: `config` the
 * sealed JSON of the string map handed to the servlet as Extism config (null when empty), `domains` null for every
 * host outside the blocklist ([] no network, else host globs), `approval` the tools whose calls wait for a person's decision.
 */
export type ServletInstallRecord = InstallBase & {
  servlet_owner: string;
  servlet_name: string;
  config: SealedSecret | null;
  domains: string[] | null;
  approval?: ToolApproval | null;
  mcp?: null;
};

/** An install as stored: a servlet's or an MCP server's (mcp-installs.ts; `isMcpInstall` tells them apart). */
export type InstallRecord = ServletInstallRecord | McpInstallRecord;

/** An install as the owner's answers show it: a servlet install with its servlet and configuration opened, or an MCP install. */
export type InstallView = ServletInstallView | { kind: 'mcp'; install: McpInstallRecord };

export interface ServletInstallView {
  kind: 'servlet';
  install: ServletInstallRecord;
  servlet: ServletRecord;
  config: Record<string, string>;
}

export interface InstallInput {
  owner: string;
  profile: string;
  /** undefined: the servlet's name. */
  name?: string;
  servlet: ServletRef;
  config: Record<string, string>;
  domains: string[] | null;
  /** null: no tool needs approval. Names must be tools of the servlet. */
  approval: ToolApproval | null;
  /** false: an install of that name already there is a 409 `install_exists` instead of being replaced. */
  allowUpdate: boolean;
}

/** Does a call of `tool` wait for approval under the install's `approval` setting? */
export const needsApproval = (approval: ToolApproval | null | undefined, tool: string): boolean =>
  approval === '*' || (Array.isArray(approval) && approval.includes(tool));

/** At most this many unknown names are listed in the 400: the rest are counted. */
const UNKNOWN_TOOLS_SHOWN = 10;

/** Throws 400 naming `settings.approval` when it names tools the servlet does not have. */
function checkApproval(approval: ToolApproval | null, servlet: ServletRecord): void {
  if (!Array.isArray(approval)) return;
  const tools = new Set(servlet.schema.tools.map((t) => t.name));
  const unknown = approval.filter((name) => !tools.has(name));
  if (unknown.length === 0) return;
  const shown = unknown.slice(0, UNKNOWN_TOOLS_SHOWN).map((name) => JSON.stringify(name));
  if (unknown.length > shown.length) shown.push(`and ${unknown.length - shown.length} more`);
  const noun = unknown.length === 1 ? 'tool' : 'tools';
  throw badRequest(`settings.approval: servlet "${servlet.owner}/${servlet.name}" has no ${noun} named ${shown.join(', ')}`);
}

const openConfig = (keyring: Keyring, sealed: SealedSecret | null): Record<string, string> =>
  sealed ? openJson<Record<string, string>>(keyring, sealed) : {};

/**
 * Installs a servlet the owner may see (their own, or a public one) into one of their profiles, or replaces the
 * install of that name: servlet, configuration and hosts all come from this call. Throws 404 for a missing
 * profile or servlet, 400 when `approval` names a tool the servlet does not have, 409 `install_exists` when
 * `allowUpdate` is false and the name is taken.
 */
export async function installServlet(models: Models, keyring: Keyring, input: InstallInput, now = new Date()): Promise<ServletInstallView & { created: boolean }> {
  await getProfile(models, input.owner, input.profile);
  const servlet = await findVisibleServlet(models, input.owner, input.servlet);
  if (!servlet) throw notFound(`servlet "${input.servlet.owner}/${input.servlet.name}"`);
  checkApproval(input.approval, servlet);
  const ref = { owner: input.owner, profile: input.profile, name: input.name ?? servlet.name };
  const set = {
    servlet_owner: servlet.owner,
    servlet_name: servlet.name,
    config: Object.keys(input.config).length > 0 ? sealJson(keyring, input.config) : null,
    domains: input.domains,
    approval: input.approval,
    // what an MCP install of that name, replaced by this one, had
    mcp: null,
    allowed_tools: null,
    modified_at: now,
  };
  const taken = () => conflict(`install "${ref.name}" already exists in profile "${ref.profile}"`, 'install_exists');

  const created = await writeInstall(models, ref, set, { allowUpdate: input.allowUpdate, taken, now });
  // the servlet may have been deleted (with its installs) while this one was written: do not leave an orphan
  if (!(await findServlet(models, servlet))) {
    await removeInstall(models, ref.owner, ref.profile, ref.name);
    throw notFound(`servlet "${servlet.owner}/${servlet.name}"`);
  }
  const install = await models.Installation.findOne(ref).lean<ServletInstallRecord>();
  if (!install || isMcpInstall(install)) throw notFound(`install "${ref.name}"`);
  return { kind: 'servlet', install, servlet, config: input.config, created };
}

/**
 * The profile's installs by name, with their servlets and opened configuration, and when anything in that list
 * last changed: an install written, a servlet replaced, an install removed, the profile (re)created. Installs
 * whose servlet is gone are left out. Throws 404 for a missing profile.
 */
export async function listInstalls(
  models: Models,
  keyring: Keyring,
  owner: string,
  profile: string,
  page?: { limit: number; after?: string },
): Promise<{ installs: InstallView[]; lastModified: Date; next: string | null }> {
  const mark = await models.Profile.findOne({ owner, name: profile }, { created_at: 1, installs_modified_at: 1 }).lean<{
    created_at: Date;
    installs_modified_at?: Date | null;
  }>();
  if (!mark) throw notFound(`profile "${profile}"`);
  // Paged by name (unique in a profile): `after` is the last name of the page before.
  const filter = page?.after === undefined ? { owner, profile } : { owner, profile, name: { $gt: page.after } };
  const query = models.Installation.find(filter).sort({ name: 1 });
  if (page) query.limit(page.limit + 1);
  const found = await query.lean<InstallRecord[]>();
  const installs = page ? found.slice(0, page.limit) : found;
  const next = page && found.length > page.limit ? installs[installs.length - 1]!.name : null;
  const servletInstalls = installs.filter((i): i is ServletInstallRecord => !isMcpInstall(i));
  const servlets = await servletsOf(models, servletInstalls);
  const byRef = new Map(servlets.map((s) => [`${s.owner}/${s.name}`, s]));

  let last = Math.max(mark.created_at.getTime(), mark.installs_modified_at?.getTime() ?? 0);
  const views: InstallView[] = [];
  for (const install of installs) {
    last = Math.max(last, install.modified_at.getTime());
    if (isMcpInstall(install)) {
      views.push({ kind: 'mcp', install: fromMcpDoc(install) });
      continue;
    }
    const servlet = byRef.get(`${install.servlet_owner}/${install.servlet_name}`);
    last = Math.max(last, servlet?.modified_at.getTime() ?? 0);
    if (servlet) views.push({ kind: 'servlet', install, servlet, config: openConfig(keyring, install.config) });
  }
  return { installs: views, lastModified: new Date(last), next };
}

/** false when the profile has no install by that name. */
export async function removeInstall(models: Models, owner: string, profile: string, name: string): Promise<boolean> {
  const res = await models.Installation.deleteOne({ owner, profile, name });
  if (res.deletedCount === 0) return false;
  await markInstallsChanged(models, [{ owner, profile }]);
  return true;
}

/**
 * May `viewer` download the module at this address? Only the owner of a servlet with these bytes, or the owner
 * of a profile that installs such a servlet (whatever the servlet's visibility now).
 */
export async function mayReadModule(models: Models, viewer: string, contentAddress: string): Promise<boolean> {
  const servlets = await models.Servlet.find({ content_address: contentAddress }, { _id: 0, owner: 1, name: 1 }).lean<ServletRef[]>();
  if (servlets.length === 0) return false;
  if (servlets.some((s) => s.owner === viewer)) return true;
  const installed = await models.Installation.exists({
    owner: viewer,
    $or: servlets.map((s) => ({ servlet_owner: s.owner, servlet_name: s.name })),
  });
  return installed !== null;
}

export interface InstallForRun {
  contentAddress: string;
  /** Throws when the module is gone (the servlet was replaced or deleted since this was read). */
  loadModule: () => Promise<Uint8Array>;
  config: Record<string, string>;
  domains: string[] | null;
  /** The later of the install's and its servlet's last change: a different value means different plugins. */
  modifiedAt: Date;
}

/**
 * What a run needs to call an install's tools. null when the install, or its servlet, no longer exists. The
 * configuration is opened here: keep it out of logs, workflow history and results.
 */
export async function loadInstallForRun(
  models: Models,
  keyring: Keyring,
  owner: string,
  profile: string,
  installName: string,
): Promise<InstallForRun | null> {
  const install = await models.Installation.findOne({ owner, profile, name: installName }).lean<InstallRecord>();
  if (!install || isMcpInstall(install)) return null;
  const servlet = await findServlet(models, { owner: install.servlet_owner, name: install.servlet_name });
  if (!servlet) return null;
  const contentAddress = servlet.content_address;
  return {
    contentAddress,
    loadModule: async () => {
      const bytes = await loadModule(models, contentAddress);
      if (!bytes) throw new Error(`module ${contentAddress} is no longer stored`);
      return bytes;
    },
    config: openConfig(keyring, install.config),
    domains: install.domains ?? null,
    modifiedAt: new Date(Math.max(install.modified_at.getTime(), servlet.modified_at.getTime())),
  };
}

/** The servlets of these installs (described tools restored: servlets.ts fromServletDoc). */
async function servletsOf(models: Models, installs: Array<{ servlet_owner: string; servlet_name: string }>): Promise<ServletRecord[]> {
  if (installs.length === 0) return [];
  const docs = await models.Servlet.find({ $or: installs.map((i) => ({ owner: i.servlet_owner, name: i.servlet_name })) }).lean<ServletRecord[]>();
  return docs.map(fromServletDoc);
}

/** A profile's servlet installs by name, with their servlets (undefined when gone), for a run's tool list. MCP installs: installsWithTools. */
export async function installsWithServlets(models: Models, owner: string, profile: string) {
  const installs = (await models.Installation.find({ owner, profile }).sort({ name: 1 }).lean<InstallRecord[]>()).filter((i): i is ServletInstallRecord => !isMcpInstall(i));
  const servlets = await servletsOf(models, installs);
  return installs.map((install) => ({ install, servlet: servlets.find((s) => s.owner === install.servlet_owner && s.name === install.servlet_name) }));
}

/** One install of a profile with the tools a run may offer from it. */
export type InstallWithTools =
  | { kind: 'servlet'; install: ServletInstallRecord; servlet: ServletRecord; tools: ServletRecord['schema']['tools'] }
  | { kind: 'mcp'; install: McpInstallRecord; tools: McpToolRecord[] };

/**
 * Every install of a profile by name, servlet or MCP, with the tools a run may offer from it: a servlet's as it
 * described them; an MCP server's as last listed, narrowed to `settings.tools` (a name no longer listed is not
 * offered). Servlet installs whose servlet is gone are left out. Approval: needsApproval (servlets),
 * mcpToolNeedsApproval (MCP, fails closed). Opening an MCP install's URL and headers: openMcpConnection.
 */
export async function installsWithTools(models: Models, owner: string, profile: string): Promise<InstallWithTools[]> {
  const installs = await models.Installation.find({ owner, profile }).sort({ name: 1 }).lean<InstallRecord[]>();
  const servlets = await servletsOf(models, installs.filter((i): i is ServletInstallRecord => !isMcpInstall(i)));
  const out: InstallWithTools[] = [];
  for (const install of installs) {
    if (isMcpInstall(install)) {
      const mcp = fromMcpDoc(install);
      out.push({ kind: 'mcp', install: mcp, tools: offeredMcpTools(mcp) });
      continue;
    }
    const servlet = servlets.find((s) => s.owner === install.servlet_owner && s.name === install.servlet_name);
    if (servlet) out.push({ kind: 'servlet', install, servlet, tools: servlet.schema.tools });
  }
  return out;
}
