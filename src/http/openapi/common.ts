import { z } from 'zod';
import { NAME_PATTERN, NAME_RULE, nameSchema } from '../../store/names';
import { tokenRouteOf } from '../token-routes';
import type { Example, Operation, ResponseSpec } from './operation';

/** Shapes and parameters most operations share. */

/** A name in a path: profiles, tasks, runs, servlets, installs (src/store/names.ts). */
export const name = (what: string, example: string) => nameSchema.meta({ description: `The ${what}: ${NAME_RULE}.`, example });

/** `:user`: `~` or the session's own username (any other user is a 404, except where said). */
export const user = z
  .string()
  .regex(new RegExp(`^(?:~|${NAME_PATTERN.source.replace(/^\^|\$$/g, '')})$`))
  .meta({ description: '`~` (the session user) or a username', example: '~' });

export const VARIANT_A_PROFILE = 'default';
/** Variant A's paths have one profile, `default`; any other is a 404. */
export const defaultProfile = z.enum([VARIANT_A_PROFILE]).meta({ description: 'Variant A has only the `default` profile', example: VARIANT_A_PROFILE });

/** What each name a path may hold is, with an example, by its parameter's name. */
const PATH_NAMES: Record<string, [what: string, example: string]> = {
  profile: ['profile', 'default'],
  task: ['task', 'haiku'],
  run: ['run', 'first'],
  servlet: ['servlet', 'greeter'],
  name: ['install', 'hello'],
};

/**
 * A route's own parameter schemas (routes/<resource>/schema.ts), each name described and given an example (unless
 * its schema describes itself).
 */
export function describeNames(shape: Record<string, z.ZodType>): Record<string, z.ZodType> {
  return Object.fromEntries(
    Object.entries(shape).map(([key, schema]) => {
      const names = PATH_NAMES[key];
      return [key, names && !schema.meta()?.description ? schema.meta({ description: `The ${names[0]}: ${NAME_RULE}.`, example: names[1] }) : schema];
    }),
  );
}

/** A path's parameters: `user`, and the rest as the route parses them (`shape`, from its schema.ts). */
export const pathParams = (shape: Record<string, z.ZodType>) => z.object({ user, ...describeNames(shape) });

/** Lists are bare JSON arrays; the next page's URL is in `Link`. */
export const linkHeader = z.object({
  Link: z.string().optional().meta({ description: 'The next page: `</api/...?limit=..&cursor=..>; rel="next"`, when there is one' }),
});

export const runUrl = z.object({ url: z.url() }).meta({ id: 'RunUrl', description: 'Where the run can be read' });

/** Every error: `{"error": {"code", "message"}}`; some add fields (e.g. the run a failed trigger recorded). */
export const errorBody = z
  .object({
    error: z.looseObject({
      code: z.string().meta({ description: 'Stable, documented in docs/users-profiles-tasks.md ("Errors")' }),
      message: z.string().meta({ description: 'Starts with the field it is about' }),
    }),
  })
  .meta({ id: 'Error' });

type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 503;

const SAMPLE_ERRORS: Record<ErrorStatus, [code: string, message: string]> = {
  400: ['invalid_request', 'task: expected letters, digits, "_", "-" or "." (starting with a letter or digit), at most 64 characters'],
  401: ['unauthorized', 'a session is required: `Authorization: Bearer <session id>` or the cookie `sessionId`'],
  403: ['forbidden', 'the signed URL is not valid'],
  404: ['not_found', 'task "default/haiku" not found'],
  405: ['method_not_allowed', 'method: PATCH is not allowed on this path (Allow: GET, HEAD)'],
  409: ['conflict', 'run "first" has already ended'],
  413: ['payload_too_large', 'body: larger than the limit'],
  415: ['unsupported_media_type', 'content-type: expected application/json'],
  429: ['write_limit', 'WRITE_LIMIT_PER_MINUTE: more than 600 writes a minute with this session; nothing was changed'],
  503: ['mongodb_unavailable', 'MongoDB did not answer in time; retry in a moment'],
};

export const errorExample = (code: string, message: string): Example => ({ summary: code, value: { error: { code, message } } });

/**
 * Error answers, each with its description (the codes it may carry) and an example. A sample `[code, message]`
 * replaces the status's generic one.
 */
export function errors(table: Partial<Record<ErrorStatus, string | [description: string, code: string, message: string]>>): Record<string, ResponseSpec> {
  return Object.fromEntries(
    Object.entries(table).map(([status, entry]) => {
      const [description, code, message] = typeof entry === 'string' ? [entry, ...SAMPLE_ERRORS[Number(status) as ErrorStatus]] : entry!;
      return [status, { description, schema: errorBody, examples: { [code]: errorExample(code, message) } }];
    }),
  );
}

const WRITES = new Set(['put', 'post', 'delete']);

/** What every session operation may also answer: no session (401), past the write limit (429), a stalled dependency (503). */
export function withSessionErrors(op: Operation): Operation {
  if (!op.session) return op;
  // Writes authenticated by the cookie are refused from another site (middleware/same-site.ts).
  const crossSite = WRITES.has(op.method) ? '; `cross_site_request`: sent with the cookie from another site (docs/console.md)' : '';
  const more = errors({
    401: 'No session (neither a Bearer token nor the cookie), or an unknown, expired or revoked one (or access token)',
    403: tokenRouteOf(op.method, op.path)
      ? [`An access token without the scope (\`insufficient_scope\`) or the profile (\`profile_not_allowed\`) this needs${crossSite}`, 'insufficient_scope', 'scope: this access token lacks "runs:control" (it has "tasks:read", "runs:read")']
      : [`\`session_required\`: an access token, which this route does not take (docs/tokens.md)${crossSite}`, 'session_required', 'this route needs a session'],
    ...(WRITES.has(op.method) ? { 429: 'Past `WRITE_LIMIT_PER_MINUTE` (`write_limit`); `Retry-After` says when to retry' } : {}),
    503: '`mongodb_unavailable` or `temporal_unavailable`: a dependency did not answer in time; `Retry-After: 1`',
  });
  return { ...op, responses: { ...more, ...op.responses } };
}
