import { badRequest, conflict, notFound } from '../errors';
import { displayUrl, type McpCallTarget, type McpDiscovery, type McpOAuthClient, type McpToolDescription } from '../mcp';
import { escapeKeys, unescapeKeys } from './document-keys';
import { markInstallsChanged } from './install-changes';
import { writeInstall } from './install-writes';
import type { InstallBase } from './installations';
import type { McpServerDoc, Models } from './models';
import { getProfile } from './profiles';
import { open, openJson, seal, sealJson, sha256, type Keyring, type SealedSecret } from './secrets';

/**
 * MCP installs: a remote MCP server (Streamable HTTP) installed into a profile beside servlets (docs/mcp.md). The
 * whole URL and the header values are sealed like provider keys (user info and query count as secrets); `mcp.url`
 * keeps the URL as shown, without them. Nothing here connects: the API lists the tools (src/mcp) and hands them in.
 */

/** A tool as the server listed it, as stored and shown (src/mcp/discover.ts trims it to what runs use). */
export type McpToolRecord = McpToolDescription;

/** What a `tools/list` (every page) and the initialize before it gave. */
export type McpListing = McpDiscovery;

/**
 * Which calls wait for a person's decision: `"*"` every one, `"none"` none, a list the tools named, `"destructive"`
 * (the default, stored as such) those MCP's annotation defaults call destructive: `readOnlyHint` not true and
 * `destructiveHint` not false.
 */
export type McpApproval = '*' | 'none' | 'destructive' | string[];
export const DEFAULT_MCP_APPROVAL: McpApproval = 'destructive';

/** An install's OAuth client as stored: what is shown, and its secrets sealed (`{ token_url?, client_secret?, private_key? }`). */
export interface McpOAuthRecord {
  token_url: string | null;
  client_id: string;
  scope: string | null;
  auth: 'client_secret' | 'private_key';
  secret: SealedSecret;
}

export type McpServerRecord = Omit<McpServerDoc, 'url_sealed' | 'headers' | 'tools' | 'server' | 'oauth'> & {
  url_sealed: SealedSecret;
  headers: SealedSecret | null;
  /** Absent on installs stored before OAuth. */
  oauth?: McpOAuthRecord | null;
  tools: McpToolRecord[];
  server: Pick<McpListing, 'serverInfo' | 'protocolVersion'> | null;
};

/** An MCP install as stored (models.ts), its tools as the server listed them (keys restored). */
export type McpInstallRecord = InstallBase & {
  mcp: McpServerRecord;
  /** The tools offered to runs; null: every tool listed. */
  allowed_tools: string[] | null;
  approval: McpApproval;
  /** `settings.sampling`; absent on installs stored before it (off). */
  sampling?: boolean;
  servlet_owner?: null;
  servlet_name?: null;
};

export const isMcpInstall = <T extends { mcp?: unknown }>(install: T): install is T & { mcp: NonNullable<T['mcp']> } =>
  install.mcp !== null && install.mcp !== undefined;

/** Restores what mcp-installs.ts stored with FerretDB-safe keys; use it on every MCP install read from the model. */
export function fromMcpDoc<T extends { mcp?: unknown }>(doc: T): McpInstallRecord {
  const record = doc as unknown as McpInstallRecord;
  const server = unescapeKeys(record.mcp.server ?? null) as McpServerRecord['server'];
  return { ...record, mcp: { ...record.mcp, tools: unescapeKeys(record.mcp.tools ?? []) as McpToolRecord[], server } };
}

/** The stored listing's size, well under a document's 16 MiB. */
const LISTING_MAX_BYTES = 8 * 1024 * 1024;
/** How deep a tool's schemas may nest: the stores refuse documents past about 100 levels, and the tool sits 4 deep. */
const SCHEMA_MAX_DEPTH = 48;

/** How deep a JSON value nests (counted up to just past SCHEMA_MAX_DEPTH). */
function depthOf(value: unknown, depth = 0): number {
  if (value === null || typeof value !== 'object' || depth > SCHEMA_MAX_DEPTH) return depth;
  let deepest = depth + 1;
  for (const v of Object.values(value as Record<string, unknown>)) deepest = Math.max(deepest, depthOf(v, depth + 1));
  return deepest;
}

/**
 * Why a listing cannot be stored (too large, schemas nested too deep), or undefined when it can: the API answers
 * `mcp_unreachable` with it, as for any other server it cannot use. (More than MAX_TOOLS tools, discoverTools refuses.)
 */
export function listingProblem(listing: McpListing): string | undefined {
  if (Buffer.byteLength(JSON.stringify(listing)) > LISTING_MAX_BYTES) return `its tool list is larger than ${LISTING_MAX_BYTES / 1024 / 1024} MiB`;
  const deep = listing.tools.find((t) => depthOf(t) > SCHEMA_MAX_DEPTH);
  if (deep) return `the schemas of its tool ${JSON.stringify(deep.name.slice(0, 100))} nest deeper than ${SCHEMA_MAX_DEPTH} levels`;
  return undefined;
}

/** At most this many unknown names are listed in a 400: the rest are counted. */
const UNKNOWN_SHOWN = 10;

/**
 * Throws 400 naming `settings.tools` or `settings.approval` when either names a tool the server did not list. After
 * a refresh that drops one, nothing here is asked again: the run side fails closed (mcpToolNeedsApproval, offeredMcpTools).
 */
export function checkMcpSettings(install: string, tools: McpToolRecord[], settings: { allowedTools: string[] | null; approval: McpApproval }): void {
  const names = new Set(tools.map((t) => t.name));
  const check = (field: string, list: string[] | null) => {
    const unknown = (list ?? []).filter((name) => !names.has(name));
    if (unknown.length === 0) return;
    const shown = unknown.slice(0, UNKNOWN_SHOWN).map((name) => JSON.stringify(name));
    if (unknown.length > shown.length) shown.push(`and ${unknown.length - shown.length} more`);
    throw badRequest(`${field}: the MCP server of "${install}" lists no ${unknown.length === 1 ? 'tool' : 'tools'} named ${shown.join(', ')}`);
  };
  check('settings.tools', settings.allowedTools);
  check('settings.approval', Array.isArray(settings.approval) ? settings.approval : null);
}

/**
 * The tools a run may offer: those listed, narrowed to `settings.tools`. A name there that the server no longer
 * lists (a refresh dropped it) is simply not offered.
 */
export function offeredMcpTools(install: Pick<McpInstallRecord, 'mcp' | 'allowed_tools'>): McpToolRecord[] {
  const allowed = install.allowed_tools;
  return allowed === null || allowed === undefined ? install.mcp.tools : install.mcp.tools.filter((t) => allowed.includes(t.name));
}

/**
 * Does a call of `tool` wait for a person's decision under the install's `settings.approval`? Fails closed: a list
 * naming a tool the server no longer lists (a refresh dropped or renamed it) makes every tool of the install wait.
 */
export function mcpToolNeedsApproval(install: Pick<McpInstallRecord, 'mcp' | 'approval'>, tool: McpToolRecord): boolean {
  const approval = install.approval ?? DEFAULT_MCP_APPROVAL;
  if (approval === '*') return true;
  if (approval === 'none') return false;
  if (approval === 'destructive') return tool.annotations?.readOnlyHint !== true && tool.annotations?.destructiveHint !== false;
  const stale = approval.some((name) => !install.mcp.tools.some((t) => t.name === name));
  return stale || approval.includes(tool.name);
}

/**
 * What a call needs to reach the server (src/mcp/pool.ts McpCallTarget): the whole URL and the headers, opened (keep
 * them out of logs, history and results), and `key`, which names the install and changes whenever its URL or headers
 * are saved again (the pool then opens a new session). The key holds no secret: a hash of the install's ciphertexts.
 */
export type McpConnection = McpCallTarget & { headers: Record<string, string> };

/** Opens an MCP install's URL, headers and OAuth client (for a call, or to list its tools again). */
export function openMcpConnection(keyring: Keyring, install: Pick<McpInstallRecord, '_id' | 'mcp'>): McpConnection {
  const oauth = install.mcp.oauth ?? null;
  const sealedAs = sha256(`${install.mcp.url_sealed.data}\n${install.mcp.headers?.data ?? ''}\n${oauth?.secret.data ?? ''}`).slice(0, 16);
  return {
    key: `${String(install._id)}:${sealedAs}`,
    url: open(keyring, install.mcp.url_sealed),
    headers: install.mcp.headers ? openJson<Record<string, string>>(keyring, install.mcp.headers) : {},
    ...(oauth ? { oauth: openOAuth(keyring, oauth) } : {}),
  };
}

function openOAuth(keyring: Keyring, oauth: McpOAuthRecord): McpOAuthClient {
  const secret = openJson<{ token_url?: string; client_secret?: string; private_key?: string }>(keyring, oauth.secret);
  return {
    clientId: oauth.client_id,
    ...(secret.token_url ? { tokenUrl: secret.token_url } : {}),
    ...(secret.client_secret ? { clientSecret: secret.client_secret } : {}),
    ...(secret.private_key ? { privateKey: secret.private_key } : {}),
    ...(oauth.scope ? { scope: oauth.scope } : {}),
  };
}

export interface McpInstallRef {
  owner: string;
  profile: string;
  name: string;
}

/** The profile's MCP install by that name; null when there is none (or the name is a servlet install). */
export async function findMcpInstall(models: Models, ref: McpInstallRef): Promise<McpInstallRecord | null> {
  const doc = await models.Installation.findOne({ owner: ref.owner, profile: ref.profile, name: ref.name }).lean();
  return doc && isMcpInstall(doc) ? fromMcpDoc(doc) : null;
}

/** The profile's MCP install by that name. Throws 404 when there is none, 400 `not_mcp_install` when it is a servlet install. */
export async function getMcpInstall(models: Models, ref: McpInstallRef): Promise<McpInstallRecord> {
  const doc = await models.Installation.findOne({ owner: ref.owner, profile: ref.profile, name: ref.name }).lean();
  if (!doc) throw notFound(`install "${ref.profile}/${ref.name}"`);
  if (!isMcpInstall(doc)) throw badRequest(`name: install "${ref.name}" is a servlet install; only MCP installs list their tools again`, 'not_mcp_install');
  return fromMcpDoc(doc);
}

/**
 * The install's URL and headers opened, with its tools and settings, for a run's call; null when the profile has no
 * MCP install by that name (uninstalled since, or replaced by a servlet).
 */
export async function loadMcpInstallForCall(models: Models, keyring: Keyring, ref: McpInstallRef): Promise<(McpConnection & { install: McpInstallRecord }) | null> {
  const install = await findMcpInstall(models, ref);
  return install ? { ...openMcpConnection(keyring, install), install } : null;
}

/**
 * The install as a worker's call needs it (activities/mcp-call.ts, McpInstallForCall): where its server is, opened,
 * whether it still offers a tool (settings.tools applied) and whether it allows sampling; null when it is gone. Read from the store on every call,
 * so a call sees the install as it is now. The worker's, and the bench's (bench/mcp.ts).
 */
export async function mcpInstallForCall(
  models: Models,
  keyring: Keyring,
  ref: McpInstallRef,
): Promise<{ url: string; headers: Record<string, string>; oauth?: McpOAuthClient; offers(tool: string): boolean; sampling: boolean } | null> {
  const found = await loadMcpInstallForCall(models, keyring, ref);
  if (!found) return null;
  const offered = new Set(offeredMcpTools(found.install).map((t) => t.name));
  return { url: found.url, headers: found.headers, ...(found.oauth ? { oauth: found.oauth } : {}), offers: (tool) => offered.has(tool), sampling: found.install.sampling === true };
}

export interface McpInstallInput extends McpInstallRef {
  /** The whole URL as given: sealed; shown without user info, query or fragment. */
  url: URL;
  headers: Record<string, string>;
  /** OAuth client credentials, or null: sealed, shown without their secrets. */
  oauth?: McpOAuthClient | null;
  listing: McpListing;
  allowedTools: string[] | null;
  approval: McpApproval;
  /** `settings.sampling` (absent: off). */
  sampling?: boolean;
  /** false: an install of that name already there is a 409 `install_exists` instead of being replaced. */
  allowUpdate: boolean;
}

const storedOAuth = (keyring: Keyring, oauth: McpOAuthClient): McpOAuthRecord => ({
  token_url: oauth.tokenUrl ? displayUrl(oauth.tokenUrl) : null,
  client_id: oauth.clientId,
  scope: oauth.scope ?? null,
  auth: oauth.privateKey ? 'private_key' : 'client_secret',
  secret: sealJson(keyring, {
    ...(oauth.tokenUrl ? { token_url: oauth.tokenUrl } : {}),
    ...(oauth.clientSecret ? { client_secret: oauth.clientSecret } : {}),
    ...(oauth.privateKey ? { private_key: oauth.privateKey } : {}),
  }),
});

const storedServer = (keyring: Keyring, url: URL, headers: Record<string, string>, oauth: McpOAuthClient | null, listing: McpListing, now: Date) => {
  const whole = new URL(url);
  whole.hash = '';
  return {
    url: displayUrl(url),
    url_sealed: seal(keyring, whole.toString()),
    header_names: Object.keys(headers),
    headers: Object.keys(headers).length > 0 ? sealJson(keyring, headers) : null,
    oauth: oauth ? storedOAuth(keyring, oauth) : null,
    tools: escapeKeys(listing.tools) as unknown[],
    server: escapeKeys({ serverInfo: listing.serverInfo, protocolVersion: listing.protocolVersion }),
    listed_at: now,
  };
};

const installTaken = (ref: McpInstallRef) => conflict(`install "${ref.name}" already exists in profile "${ref.profile}"`, 'install_exists');

/** Throws 404 for a missing profile and, when `allowUpdate` is false, 409 `install_exists` for a name taken: before connecting. */
export async function checkMcpInstallable(models: Models, ref: McpInstallRef, allowUpdate: boolean): Promise<void> {
  await getProfile(models, ref.owner, ref.profile);
  if (!allowUpdate && (await models.Installation.exists({ owner: ref.owner, profile: ref.profile, name: ref.name }))) throw installTaken(ref);
}

/**
 * Installs an MCP server into one of the owner's profiles, or replaces the install of that name (a servlet install
 * too): URL, headers, tools and settings all come from this call. Throws 404 for a missing profile, 400 when a
 * setting names a tool the server did not list, 409 `install_exists` when `allowUpdate` is false and the name is taken.
 */
export async function installMcp(models: Models, keyring: Keyring, input: McpInstallInput, now = new Date()): Promise<{ install: McpInstallRecord; created: boolean }> {
  await getProfile(models, input.owner, input.profile);
  checkMcpSettings(input.name, input.listing.tools, { allowedTools: input.allowedTools, approval: input.approval });
  const ref = { owner: input.owner, profile: input.profile, name: input.name };
  const set = {
    servlet_owner: null,
    servlet_name: null,
    config: null,
    domains: null,
    mcp: storedServer(keyring, input.url, input.headers, input.oauth ?? null, input.listing, now),
    allowed_tools: input.allowedTools,
    approval: input.approval,
    sampling: input.sampling ?? false,
    modified_at: now,
  };
  const created = await writeInstall(models, ref, set, { allowUpdate: input.allowUpdate, taken: () => installTaken(ref), now });
  const install = await findMcpInstall(models, ref);
  if (!install) throw notFound(`install "${ref.name}"`);
  return { install, created };
}

/**
 * Stores a new listing of the install's tools (its settings stay as they are, even when they name a tool no longer
 * listed: runs fail closed). `listedFrom` is the install as read before listing: when it was replaced or removed
 * meanwhile, nothing is written and the install as it is now is returned (null when gone).
 */
export async function saveMcpListing(models: Models, keyring: Keyring, listedFrom: McpInstallRecord, listing: McpListing, now = new Date()): Promise<McpInstallRecord | null> {
  const ref = { owner: listedFrom.owner, profile: listedFrom.profile, name: listedFrom.name };
  const res = await models.Installation.updateOne(
    { ...ref, 'mcp.url_sealed.data': listedFrom.mcp.url_sealed.data, modified_at: listedFrom.modified_at },
    {
      $set: {
        'mcp.tools': escapeKeys(listing.tools),
        'mcp.server': escapeKeys({ serverInfo: listing.serverInfo, protocolVersion: listing.protocolVersion }),
        'mcp.listed_at': now,
        modified_at: now,
      },
    },
  );
  if (res.matchedCount === 1) await markInstallsChanged(models, [ref]);
  return findMcpInstall(models, ref);
}
