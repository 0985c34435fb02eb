import { z } from 'zod';
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
