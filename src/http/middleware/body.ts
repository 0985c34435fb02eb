import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../../errors';

export interface JsonBodyLimits {
  /** Largest body, in bytes (after any content-encoding is undone). */
  maxBytes: number;
  /** Deepest nesting of arrays and objects. */
  maxDepth: number;
}

/**
 * JSON bodies only, within `limits`. A body with another content type is a 415 (chunked ones included, even empty);
 * a body of length 0 is `{}`; a body that is not a JSON object (`null` included) is a 400 (routes that take other
 * shapes read `ctx.request.body` themselves). A `__proto__` key is data (JSON.parse makes it an own property, never
 * a prototype): trigger payloads keep it, zod schemas drop it like any unknown field. A body whose content-encoding
 * cannot be undone is a 400.
 */
export function jsonBody(limits: JsonBodyLimits): Middleware {
  const { maxBytes, maxDepth } = limits;
  // The text parser reads the raw text (undoing gzip, deflate or br, within the limit); JSON.parse runs here, so the
  // depth is checked first and `__proto__` keys are not refused as the JSON parser would.
  const reader = koaBody({ json: false, text: true, textTypes: ['json', '+json'], urlencoded: false, multipart: false, textLimit: maxBytes });
  return async (ctx, next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method) || ctx.state.rawBody) return next();
    const length = Number(ctx.get('content-length') || 0);
    if (length > maxBytes) throw payloadTooLarge(`body: ${length} bytes is over the limit of ${maxBytes}`);
    // A body that is not JSON: one with a length, or chunked (no length is known then, so even an empty chunked body
    // must say JSON); a body of length 0 is `{}` whatever its type.
    if ((ctx.request.length || ctx.get('transfer-encoding')) && !ctx.is('json')) {
      throw unsupportedMediaType(`content-type: expected application/json, got ${ctx.get('content-type') || 'none'}`);
    }
    try {
      await reader(ctx, async () => undefined);
    } catch (err) {
      throw bodyReadError(err, ctx.get('content-encoding'), maxBytes);
    }
    const text = ctx.request.body as unknown;
    if (text === undefined || (typeof text === 'string' && text.trim() === '')) {
      ctx.request.body = {};
      return next();
    }
    const depth = jsonDepth(String(text), maxDepth);
    if (depth > maxDepth) throw badRequest(`body: nested deeper than the limit of ${maxDepth} levels`, 'json_too_deep');
    let body: unknown;
    try {
      body = JSON.parse(String(text));
    } catch {
      throw badRequest('body: not valid JSON', 'invalid_json');
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest(`body: expected a JSON object, got ${body === null ? 'null' : Array.isArray(body) ? 'an array' : typeof body}`);
    }
    (ctx.request as { body: unknown }).body = body;
    return next();
  };
}

/** The body parser's failures, as the client's mistakes they are: too large, or an encoding that is not what it says. */
function bodyReadError(err: unknown, encoding: string, maxBytes: number): unknown {
  const e = err as { status?: number; type?: string; message?: string };
  if (e.status === 413 || e.type === 'entity.too.large') return payloadTooLarge(`body: larger than the limit of ${maxBytes} bytes`);
  if (e.status === 415 || e.type === 'encoding.unsupported') return unsupportedMediaType(`content-encoding: "${encoding}" is not supported (gzip, deflate, br or none)`);
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) return err;
  // zlib's errors (the body is not compressed as its content-encoding says), a cut-off or undecodable body.
  return badRequest(encoding ? `body: could not be decoded as content-encoding "${encoding}"` : 'body: could not be read', 'invalid_body');
}

/**
 * How deeply arrays and objects nest in JSON `text`, counted without parsing (brackets inside strings do not count);
 * stops counting once past `stopAbove`.
 */
export function jsonDepth(text: string, stopAbove: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
