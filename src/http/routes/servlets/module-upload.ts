import type { Context, Middleware } from 'koa';
import { AppError, badRequest, payloadTooLarge, unsupportedMediaType } from '../../../errors';
import type { Visibility } from '../../../store/servlets';
import { parse } from '../../validate';
import { publishJsonBody, publishQuery } from './schema';
import getRawBody from 'raw-body';

/** Content types a module may be sent in as raw bytes. */
export const MODULE_CONTENT_TYPES = ['application/wasm', 'application/octet-stream'];

const PUBLISH_PATH = /^\/api\/servlets\/[^/]+\/[^/]+\/?$/;
/** Room for the JSON form's other fields around the base64 text. */
const JSON_OVERHEAD_BYTES = 64 * 1024;

/**
 * Mounted before the JSON body parser: a publish reads its own body, because a module is binary and larger than
 * the JSON body limit allows. The body is read only in the route, after the session check, so a request without
 * a session never gets a module-sized buffer.
 */
export function moduleUploadBypass(): Middleware {
  return (ctx, next) => {
    if (ctx.method === 'PUT' && PUBLISH_PATH.test(ctx.path)) ctx.state.rawBody = true;
    return next();
  };
}

export interface ModuleUpload {
  bytes: Uint8Array;
  description?: string;
  visibility?: Visibility;
}

/**
 * The module of a publish: raw bytes (`application/wasm` or `application/octet-stream`, with `?description=` and
 * `?visibility=`) or JSON `{"module": "<base64>", "description", "visibility"}`. Throws 413 over `limitBytes` (of
 * module bytes), 415 for another content type or a compressed body, 400 naming the field otherwise.
 */
export async function readModuleUpload(ctx: Context, limitBytes: number): Promise<ModuleUpload> {
  const encoding = ctx.get('content-encoding');
  if (encoding && encoding.toLowerCase() !== 'identity') throw unsupportedMediaType(`content-encoding: "${encoding}" is not accepted; send the module as it is`);
  const hasBody = ctx.get('transfer-encoding') !== '' || Number(ctx.get('content-length') || 0) > 0;
  if (!hasBody) throw badRequest('body: expected the module (content-type: application/wasm) or JSON {"module": "<base64>"}');
  if (ctx.is(MODULE_CONTENT_TYPES)) {
    const query = parse(publishQuery, { description: ctx.query.description, visibility: ctx.query.visibility }, 'query');
    const bytes = await readBody(ctx, limitBytes, `module: larger than the limit of ${limitBytes} bytes`);
    if (bytes.length === 0) throw badRequest("body: expected the module's bytes");
    return { bytes: toUint8Array(bytes), ...query };
  }
  if (ctx.is('json')) {
    const jsonLimit = Math.ceil(limitBytes / 3) * 4 + JSON_OVERHEAD_BYTES;
    const text = (await readBody(ctx, jsonLimit, `module: larger than the limit of ${limitBytes} bytes`)).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new AppError(400, 'invalid_json', 'body: not valid JSON');
    }
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw badRequest('body: expected a JSON object');
    const body = parse(publishJsonBody, json);
    const bytes = decodeBase64(body.module);
    if (bytes.length > limitBytes) throw payloadTooLarge(`module: ${bytes.length} bytes is over the limit of ${limitBytes}`);
    return { bytes: toUint8Array(bytes), description: body.description, visibility: body.visibility };
  }
  throw unsupportedMediaType(
    `content-type: expected application/wasm, application/octet-stream or application/json, got ${ctx.get('content-type') || 'none'}`,
  );
}

/**
 * Reads the request body (raw-body), refusing it (413) as soon as it is known to be over `limit`. A body cut off
 * midway leaves unread bytes on the connection, so that answer closes it; one refused on its declared length alone
 * is not read at all (Node discards it after the answer and the connection stays usable).
 */
async function readBody(ctx: Context, limit: number, tooLarge: string): Promise<Buffer> {
  try {
    return await getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
  } catch (err) {
    const e = err as { type?: string; received?: number };
    if (e.type !== 'entity.too.large') throw err;
    if (e.received !== undefined) ctx.set('Connection', 'close');
    throw payloadTooLarge(tooLarge);
  }
}

/** Strict: Buffer.from(text, 'base64') skips characters it does not know, which would hide a damaged upload. */
function decodeBase64(text: string): Buffer {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
    throw badRequest('module: expected base64 (standard alphabet)');
  }
  return Buffer.from(compact, 'base64');
}

const toUint8Array = (buffer: Buffer) => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
