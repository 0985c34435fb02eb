import Router from '@koa/router';
import type { Context } from 'koa';
import { StoredContentMissing } from '../../../store/run-content';
import { createTextCache } from '../../../store/text-cache';
import type { AppDeps } from '../../deps';
import { parse } from '../../validate';
import { authorizeCodec, codecCors } from './access';
import { decodePayloads, type DecodeLimits, type LoadText } from './decode-payloads';
import { codecBody } from './schema';

/**
 * `<endpoint>/decode` and `<endpoint>/encode`, the endpoint being `/codec` or `/codec/<token>`. Clients append the
 * operation to the endpoint they were given, so an endpoint configured with a trailing slash arrives as
 * `/codec//decode`: an empty token, read as none.
 */
const CODEC_PATH = /^\/codec(?:\/([^/]*))?\/(decode|encode)$/;
const LIMITS: DecodeLimits = { maxRefs: 256, maxTextBytes: 32 * 1024 * 1024 };
/** Share of CONTENT_CACHE_MB for texts shown in the Web UI (run reads keep their own, larger cache). */
const CACHE_SHARE = 1 / 8;

/** The token in the path, if any. Rewrites the path the access log records, so the token stays out of logs. */
function readPath(ctx: Context): { token?: string; op: 'decode' | 'encode' } {
  const match = CODEC_PATH.exec(ctx.path)!;
  const segment = match[1];
  const op = match[2] as 'decode' | 'encode';
  if (!segment) return { op };
  ctx.path = `/codec/***/${op}`;
  try {
    return { token: decodeURIComponent(segment), op };
  } catch {
    return { token: segment, op };
  }
}

/**
 * The codec server of the Temporal Web UI and `temporal --codec-endpoint`. History holds references to large
 * contents (prompts, answers, tool results) stored in MongoDB; `decode` puts the texts back so an operator reads
 * them. `encode` returns payloads unchanged: what the UI or CLI sends (a signal's input) is not stored apart. No
 * session: the UI has none; see access.ts for who may call.
 */
export function codecRouter(deps: AppDeps): Router {
  const { config } = deps;
  const texts = createTextCache(deps.db.models, Math.floor(deps.config.CONTENT_CACHE_MB * 1024 * 1024 * CACHE_SHARE / 2));
  // A text that is gone (its run was deleted) gets a note; a store that cannot answer fails the request (503).
  const load: LoadText = async (ref) => {
    try {
      return await texts.load(ref);
    } catch (err) {
      if (err instanceof StoredContentMissing) return undefined;
      throw err;
    }
  };
  const cors = codecCors(config);
  const router = new Router();

  router.options(CODEC_PATH, (ctx) => {
    readPath(ctx);
    cors.preflight(ctx);
  });

  router.post(CODEC_PATH, async (ctx) => {
    const { token, op } = readPath(ctx);
    cors.answer(ctx);
    authorizeCodec(ctx, config, token);
    const { payloads } = parse(codecBody, ctx.request.body);
    // Another namespace's payloads are not ours to rewrite, whatever their shape.
    const namespace = ctx.get('x-namespace');
    const ours = !namespace || namespace === config.TEMPORAL_NAMESPACE;
    ctx.body = { payloads: op === 'decode' && ours ? await decodePayloads(payloads, load, LIMITS) : payloads };
  });

  return router;
}
