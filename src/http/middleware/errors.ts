import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import { formatZodError } from '../validate';
import { isBusy } from '../../store/connect';

/** Maps every error once: AppError → its status, zod → 400, body parser errors → 400/413/415, anything else → 500. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError(404, 'not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const { status, code, message } = toPublicError(err);
      if (status >= 500) logger.error({ err, method: ctx.method, path: ctx.path }, 'request failed');
      if (status === 503) ctx.set('Retry-After', '1');
      ctx.status = status;
      ctx.body = { error: { code, message } };
    }
  };
}

function toPublicError(err: unknown): { status: number; code: string; message: string } {
  if (err instanceof AppError) return { status: err.status, code: err.code, message: err.message };
  if (err instanceof ZodError) return { status: 400, code: 'invalid_request', message: formatZodError(err) };
  const e = err as { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string };
  const status = e.status ?? e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413 || e.type === 'entity.too.large') {
      return { status: 413, code: 'payload_too_large', message: 'body: larger than the limit' };
    }
    if (status === 415) return { status: 415, code: 'unsupported_media_type', message: e.message ?? 'unsupported content type' };
    if (e.type === 'entity.parse.failed' || /JSON|Unexpected|parse/i.test(e.message ?? '')) {
      return { status: 400, code: 'invalid_json', message: 'body: not valid JSON' };
    }
    return { status, code: 'invalid_request', message: e.expose && e.message ? e.message : 'bad request' };
  }
  if (isBackendUnavailable(err)) {
    return { status: 503, code: 'service_unavailable', message: 'a backend (Temporal or the database) did not answer in time; retry (triggers are idempotent)' };
  }
  return { status: 500, code: 'internal', message: 'internal error' };
}

/** Timeouts and unreachable servers of Temporal (gRPC) or MongoDB: the request may well succeed if retried. */
function isBackendUnavailable(err: unknown): boolean {
  const e = err as { name?: string; code?: number | string; cause?: unknown } | null;
  if (!e) return false;
  // gRPC: 4 DEADLINE_EXCEEDED, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE
  if (e.name === 'ServiceError' && [4, 8, 14].includes(Number((e.cause as { code?: number } | undefined)?.code))) return true;
  if (isBusy(err)) return true;
  return /^Mongo(Network|NetworkTimeout|ServerSelection|WaitQueueTimeout|PoolCleared)Error$/.test(e.name ?? '');
}
