import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../../errors';

/**
 * JSON bodies only, up to `limit` bytes. A body with another content type is a 415; an empty body is `{}`;
 * a body that is not a JSON object is a 400 (routes that take other shapes read `ctx.request.body` themselves).
 */
export function jsonBody(limit: number): Middleware {
  const parser = koaBody({ json: true, text: false, urlencoded: false, multipart: false, jsonLimit: limit, jsonStrict: false });
  return async (ctx, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method) || ctx.state.rawBody) return next();
    const length = Number(ctx.get('content-length') || 0);
    if (length > limit) throw payloadTooLarge(`body: ${length} bytes is over the limit of ${limit}`);
    if (ctx.request.length && !ctx.is('json')) {
      throw unsupportedMediaType(`content-type: expected application/json, got ${ctx.get('content-type') || 'none'}`);
    }
    await parser(ctx, async () => undefined);
    const body = ctx.request.body as unknown;
    // An empty body is `{}` whatever its content type says (koa-body yields "" for it).
    if (body === undefined || body === null || (body === '' && !ctx.request.length)) {
      ctx.request.body = {};
    } else if (typeof body !== 'object' || Array.isArray(body)) {
      throw badRequest('body: expected a JSON object');
    }
    return next();
  };
}
