import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import { AppError, dependencyUnavailable, RateLimited } from '../../errors';
import { unavailableDependency } from '../../dependencies';
import type { Logger } from '../../logger';
import { formatZodError } from '../validate';


/** Maps every error once: AppError → its status, zod → 400, body parser errors → 400/413/415, anything else → 500. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError(404, 'not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const { status, code, message, extra } = toPublicError(err);
      if (status === 503) logger.warn({ err: { name: (err as Error)?.name, message: (err as Error)?.message }, method: ctx.method, path: ctx.path, code }, 'a dependency did not answer');
      else if (status >= 500) logger.error({ err, method: ctx.method, path: ctx.path }, 'request failed');
      if (status === 503) ctx.set('Retry-After', '1');
      if (err instanceof RateLimited) ctx.set('Retry-After', String(err.retryAfterSeconds));
      ctx.status = status;
      ctx.body = { error: { code, message, ...extra } };
    }
  };
}

function toPublicError(err: unknown): { status: number; code: string; message: string; extra?: Record<string, unknown> } {
  if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message, extra: err.extra };
  if (err instanceof ZodError) return { status: 400, code: 'invalid_request', message: formatZodError(err) };
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e.status ?? e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413 || e.type === 'entity.too.large') {
      return { status: 413, code: 'payload_too_large', message: 'body: larger than the limit' };
    }
    if (status === 415) return { status: 415, code: 'unsupported_media_type', message: e.message ?? 'unsupported content type' };
    // raw-body / co-body name a parse failure by `type`; a JSON.parse of our own throws a SyntaxError.
    if (e.type === 'entity.parse.failed' || err instanceof SyntaxError) {
      return { status: 400, code: 'invalid_json', message: 'body: not valid JSON' };
    }
    return { status, code: 'invalid_request', message: e.expose && e.message ? e.message : 'bad request' };
  }
  const dependency = unavailableDependency(err);
  if (dependency) return toPublicError(dependencyUnavailable(dependency));
  return { status: 500, code: 'internal', message: 'internal error' };
}
