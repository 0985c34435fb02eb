import { z } from 'zod';
import { badRequest } from '../../../errors';
import { MAX_TOOLS } from '../../../mcp';
import { privateKeyProblem } from '../../../mcp/oauth';
import { NAME_PATTERN, NAME_RULE, nameSchema } from '../../../store/names';

export const profileParams = z.object({ profile: nameSchema });
export const installParams = z.object({ profile: nameSchema, name: nameSchema });

/** Config values reach the servlet through Extism config, which holds strings. */
const CONFIG_MAX_ENTRIES = 100;
const CONFIG_KEY_MAX_LENGTH = 256;
const CONFIG_VALUE_MAX_LENGTH = 64 * 1024;
const DOMAINS_MAX = 100;
const APPROVAL_MAX = 200;

/** The same characters as the runtime's host globs (network-policy.ts): `*` matches any run of characters. */
const domain = z.string().regex(/^[A-Za-z0-9*_.-]{1,253}$/, 'expected a host name or a host glob such as *.example.com');
const network = z.object({ domains: z.array(domain).max(DOMAINS_MAX).nullish() }).nullish();

const config = z
  .record(z.string().min(1).max(CONFIG_KEY_MAX_LENGTH), z.string().max(CONFIG_VALUE_MAX_LENGTH, `expected at most ${CONFIG_VALUE_MAX_LENGTH} characters`))
  .refine((c) => Object.keys(c).length <= CONFIG_MAX_ENTRIES, `expected at most ${CONFIG_MAX_ENTRIES} entries`)
  .nullish();

/**
 * The tools whose calls wait for a person's decision: `"*"` (all of them) or their names as the servlet's schema
 * gives them. Whether each name is a tool of the servlet is checked against it on install (store/installations.ts).
 * The list's length is a refinement, not `.max()`: zod reports a failed `.max()` inside a union only with the
 * union's own message.
 */
const approval = z
  .union(
    [
      z.literal('*'),
      z
        .array(z.string().min(1, 'expected a tool name').max(APPROVAL_MAX, `expected at most ${APPROVAL_MAX} characters`))
        .min(1, 'expected at least one tool name, or "*"')
        .refine((names) => names.length <= APPROVAL_MAX, `expected at most ${APPROVAL_MAX} tool names`)
        .refine((names) => new Set(names).size === names.length, 'expected each tool name once'),
    ],
    { error: 'expected "*" or a list of tool names' },
  )
  .nullish();

const servletSlug = z
  .string()
  .transform((slug, ctx) => {
    const [owner, name, extra] = slug.split('/');
    const ownerOk = owner === '~' || (owner !== undefined && NAME_PATTERN.test(owner));
    if (extra !== undefined || !ownerOk || name === undefined || !NAME_PATTERN.test(name)) {
      ctx.addIssue({ code: 'custom', message: `expected "<owner>/<servlet>", each ${NAME_RULE}` });
      return z.NEVER;
    }
    return { owner, name };
  });

/**
 * `POST /api/profiles/~/<profile>/installations` as the Python client sends it. Hosts may also come as
 * `settings.permissions.network.domains`, the shape the list answers with. `filesystem` is ignored: servlets never
 * get one. `approval` (ours, not the hosted service's) absent or null: no tool needs approval. Unknown fields are ignored.
 */
export const installBody = z.object({
  servlet_slug: servletSlug,
  name: nameSchema.optional(),
  settings: z
    .object({
      config,
      network,
      permissions: z.object({ network }).nullish(),
      approval,
    })
    .nullish(),
  allow_update: z.boolean().default(true),
});
export type InstallBody = z.infer<typeof installBody>;

/**
 * The hosts an install may reach: null (no setting, or "*" among them) = every host outside the blocklist; a list
 * of lower-case globs narrows that; [] = no network at all.
 */
export function installDomains(body: InstallBody): string[] | null {
  const domains = body.settings?.network?.domains ?? body.settings?.permissions?.network?.domains;
  if (domains === undefined || domains === null || domains.includes('*')) return null;
  return [...new Set(domains.map((d) => d.toLowerCase()))];
}

const MCP_URL_MAX_LENGTH = 2048;
const MCP_HEADERS_MAX = 32;
const MCP_HEADER_VALUE_MAX_LENGTH = 8 * 1024;
const MCP_TOOL_NAME_MAX_LENGTH = 256;

/** Headers the MCP transport sets itself: an install may not send its own. */
export const TRANSPORT_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'connection', 'transfer-encoding', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id']);

/** An http(s) URL. Which scheme and host are allowed is the network guard's to say, at install (router.ts). */
const mcpUrl = z
  .string()
  .max(MCP_URL_MAX_LENGTH)
  .transform((text, ctx) => {
    const url = URL.canParse(text) ? new URL(text) : undefined;
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      ctx.addIssue({ code: 'custom', message: 'expected an https:// URL' });
      return z.NEVER;
    }
    return url;
  });

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
/** Visible characters, spaces and tabs: no line breaks or other controls. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const mcpHeaders = z
  .record(z.string(), z.string().max(MCP_HEADER_VALUE_MAX_LENGTH).regex(HEADER_VALUE, 'expected a header value: no line breaks or other control characters'))
  .superRefine((headers, ctx) => {
    const seen = new Set<string>();
    for (const name of Object.keys(headers)) {
      const lower = name.toLowerCase();
      if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'expected a header name (letters, digits and !#$%&\'*+.^_`|~-)' });
      else if (TRANSPORT_HEADERS.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'set by the MCP transport itself' });
      else if (seen.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'given twice (header names ignore case)' });
      seen.add(lower);
    }
    if (seen.size > MCP_HEADERS_MAX) ctx.addIssue({ code: 'custom', message: `expected at most ${MCP_HEADERS_MAX} headers` });
  });

const toolNames = (what: string) =>
  z
    .array(z.string().min(1, 'expected a tool name').max(MCP_TOOL_NAME_MAX_LENGTH, `expected at most ${MCP_TOOL_NAME_MAX_LENGTH} characters`))
    .refine((names) => names.length <= MAX_TOOLS, `expected at most ${MAX_TOOLS} ${what}`)
    .refine((names) => new Set(names).size === names.length, 'expected each tool name once');

/** `"destructive"` when absent (the default for an MCP install, stored as such: store/mcp-installs.ts). */
const mcpApproval = z
  .union([z.literal('*'), z.literal('none'), z.literal('destructive'), toolNames('tool names').min(1, 'expected at least one tool name, or "*", "none" or "destructive"')], {
    error: 'expected "*", "none", "destructive" or a list of tool names',
  })
  .nullish();

const OAUTH_TEXT_MAX_LENGTH = 1024;
const OAUTH_SECRET_MAX_LENGTH = 4096;
const OAUTH_KEY_MAX_LENGTH = 16 * 1024;
/** Visible ASCII: an OAuth client id or secret goes into a form and a Basic header. */
const VISIBLE = /^[\x20-\x7e]+$/;
/** RFC 6749 3.3: scope tokens separated by single spaces. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/**
 * `mcp.oauth`: OAuth client credentials (docs/mcp.md "OAuth client credentials"): `client_secret`
 * (client_secret_basic, or client_secret_post when the metadata says only that) or `private_key` (a PEM,
 * private_key_jwt), one of them. `token_url` absent: discovered from the server's metadata.
 */
const mcpOAuth = z
  .object({
    token_url: mcpUrl.nullish().meta({ description: 'The token endpoint; absent: discovered (RFC 9728, RFC 8414). https:// unless its host is in MCP_ALLOWLIST' }),
    client_id: z.string().min(1).max(OAUTH_TEXT_MAX_LENGTH).regex(VISIBLE, 'expected visible ASCII characters'),
    client_secret: z.string().min(1).max(OAUTH_SECRET_MAX_LENGTH).regex(VISIBLE, 'expected visible ASCII characters').nullish().meta({ description: 'Sealed, never shown' }),
    scope: z.string().max(OAUTH_TEXT_MAX_LENGTH).regex(SCOPE, 'expected scope names separated by single spaces').nullish(),
    private_key: z.string().max(OAUTH_KEY_MAX_LENGTH).nullish().meta({ description: 'A PEM private key (RSA, EC or Ed25519) for private_key_jwt; sealed, never shown' }),
  })
  .superRefine((oauth, ctx) => {
    const secret = oauth.client_secret !== undefined && oauth.client_secret !== null;
    const key = oauth.private_key !== undefined && oauth.private_key !== null;
    if (!secret && !key) ctx.addIssue({ code: 'custom', path: ['client_secret'], message: 'required (or private_key, for private_key_jwt)' });
    if (secret && key) ctx.addIssue({ code: 'custom', path: ['private_key'], message: 'give client_secret or private_key, not both' });
    else if (key) {
      const problem = privateKeyProblem(oauth.private_key!);
      if (problem) ctx.addIssue({ code: 'custom', path: ['private_key'], message: problem });
    }
  });

/**
 * `POST /api/profiles/~/<profile>/installations` installing an MCP server (docs/mcp.md): in place of `servlet_slug`,
 * `mcp: { url, headers? }`. `settings.tools` narrows the tools offered to runs (absent: all of them);
 * `settings.approval` absent means `"destructive"`; `settings.sampling` absent means false. Unknown fields are ignored.
 */
export const mcpInstallBody = z.object({
  name: nameSchema,
  mcp: z.object({
    url: mcpUrl.meta({ description: 'The server\'s Streamable HTTP endpoint. https:// unless its host is in MCP_ALLOWLIST. User info and query are kept sealed, never shown' }),
    headers: mcpHeaders.nullish().meta({ description: 'Sent with every request; values are sealed and never shown' }),
    oauth: mcpOAuth.nullish().meta({ description: 'OAuth client credentials: a token is obtained and sent as Authorization: Bearer' }),
  }).superRefine((mcp, ctx) => {
    if (!mcp.oauth) return;
    const authorization = Object.keys(mcp.headers ?? {}).find((name) => name.toLowerCase() === 'authorization');
    if (authorization) ctx.addIssue({ code: 'custom', path: ['headers', authorization], message: 'set by mcp.oauth (its token)' });
  }),
  settings: z
    .object({
      tools: toolNames('tool names').nullish(),
      approval: mcpApproval,
      sampling: z.boolean().nullish().meta({ description: 'The server may ask the run\'s model for an answer during a call (counted in the run\'s usage); absent: false' }),
    })
    .nullish(),
  allow_update: z.boolean().default(true),
});
export type McpInstallBody = z.infer<typeof mcpInstallBody>;

/** Which kind of install a body asks for (the same path takes both). Throws 400 when it names both a servlet and an MCP server, or neither. */
export function installKind(body: unknown): 'servlet' | 'mcp' {
  // not an object: the servlet body's parse says what is wrong with it, as it always has
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'servlet';
  const given = (key: string) => (body as Record<string, unknown>)[key] !== undefined && (body as Record<string, unknown>)[key] !== null;
  if (given('servlet_slug') && given('mcp')) throw badRequest('servlet_slug, mcp: give one of them (a servlet, or an MCP server), not both');
  if (!given('servlet_slug') && !given('mcp')) throw badRequest('servlet_slug: required (or mcp, to install an MCP server)');
  return given('mcp') ? 'mcp' : 'servlet';
}
