import type { ZodError, ZodType } from 'zod';
import { AppError } from '../errors';

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
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError(400, 'invalid_request', formatZodError(result.error, where));
  return result.data;
}
