import { z, type ZodError, type ZodType } from 'zod';
import { AppError } from '../errors';

/** The issue as zod gives it to an error map (the library does not export the type by a name of its own). */
type RawIssue = Parameters<NonNullable<z.core.$ZodConfig['customError']>>[0];

const kindOf = (input: unknown) => (input === null ? 'null' : Array.isArray(input) ? 'array' : Number.isNaN(input) ? 'NaN' : typeof input);
const quoted = (keys: readonly PropertyKey[]) => keys.map((k) => `"${String(k)}"`).join(', ');

function sizeMessage(issue: { origin?: string; inclusive?: boolean }, bound: number | bigint, side: 'least' | 'most'): string | undefined {
  const n = Number(bound);
  switch (issue.origin) {
    case 'number':
    case 'int':
    case 'bigint':
      if (issue.inclusive === false) return side === 'least' ? `must be greater than ${n}` : `must be less than ${n}`;
      return `must be at ${side} ${n}`;
    case 'string':
      if (side === 'least' && n === 1) return 'must not be empty';
      return `must be at ${side} ${n} character${n === 1 ? '' : 's'}`;
    case 'array':
    case 'set':
      if (side === 'least' && n === 1) return 'must not be empty';
      return `must have at ${side} ${n} item${n === 1 ? '' : 's'}`;
    default:
      return undefined;
  }
}

/**
 * The API's one zod error map: what a person reads instead of the library's own words. A message a schema gives
 * itself (`{ error: ... }`) wins over this one; what it does not know falls through to zod's. Paths are added by
 * formatZodError (`limits.timeout_s: must be greater than 0`).
 */
export function apiErrorMap(issue: RawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'required';
      if (issue.expected === 'int') return typeof issue.input === 'number' ? 'must be a whole number' : `expected a whole number, received ${kindOf(issue.input)}`;
      return `expected ${issue.expected}, received ${kindOf(issue.input)}`;
    case 'too_small':
      return sizeMessage(issue, issue.minimum, 'least');
    case 'too_big':
      return sizeMessage(issue, issue.maximum, 'most');
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${quoted(issue.keys)}`;
    default:
      return undefined;
  }
}

// Schemas parsed outside `parse` (a route's own `schema.parse`) speak the same words.
z.config({ customError: apiErrorMap });

/** `parameters.name: expected string` — one line per issue, the field path first. */
export function formatZodError(err: ZodError, prefix?: string): string {
  return err.issues
    .map((issue) => {
      const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.') || 'body';
      return `${path}: ${issue.message.replace(/^Invalid input: /, '')}`;
    })
    .join('; ');
}

/** Parses or throws a 400 naming the field. `where` prefixes paths (e.g. "query"). */
export function parse<T>(schema: ZodType<T>, value: unknown, where?: string): T {
  const result = schema.safeParse(value, { error: apiErrorMap });
  if (!result.success) throw new AppError(400, 'invalid_request', formatZodError(result.error, where));
  return result.data;
}
