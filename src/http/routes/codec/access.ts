import crypto from 'node:crypto';
import type { Context } from 'koa';
import type { Config } from '../../../config';
import { forbidden, unauthorized } from '../../../errors';

/** What the Web UI sends besides the body: `X-Namespace` always, the `Authorization` pair when it passes a token. */
const ALLOW_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';
/** How long a browser may reuse a preflight: the UI asks to decode once per event shown. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;
/** The dev server's Web UI, whatever port it was given (the API does not know the dev command's settings). */
const LOOPBACK_ORIGIN = /^http:\/\/(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$/;
const LOOPBACK_ADDRESS = /^(?:127(?:\.\d{1,3}){3}|::1|::ffff:127(?:\.\d{1,3}){3})$/;

type CodecConfig = Pick<Config, 'CODEC_TOKEN' | 'CODEC_CORS_ORIGINS' | 'NODE_ENV' | 'PUBLIC_URL'>;

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
};

/**
 * Who may call the codec endpoint from a browser: CODEC_CORS_ORIGINS, the API's own origin, and outside production
 * any loopback origin. A browser request from another origin is refused outright, not only left unreadable: a page
 * that rebinds its own host name to 127.0.0.1 would otherwise reach a development API as a loopback caller.
 */
export function codecCors(config: CodecConfig) {
  const listed = new Set([...config.CODEC_CORS_ORIGINS.map(originOf), originOf(config.PUBLIC_URL)]);
  const allowed = (origin: string) => listed.has(origin) || (config.NODE_ENV !== 'production' && LOOPBACK_ORIGIN.test(origin));

  /** Sets the CORS answer for the request's origin. Throws 403 `origin_not_allowed` for an origin not allowed. */
  const answer = (ctx: Context) => {
    ctx.vary('Origin');
    const origin = ctx.get('origin');
    if (!origin) return;
    if (!allowed(origin)) throw forbidden(`origin ${origin} may not call the codec endpoint: add it to CODEC_CORS_ORIGINS`, 'origin_not_allowed');
    ctx.set('Access-Control-Allow-Origin', origin);
    // The UI's "include cross-origin credentials" setting sends cookies; without this the browser drops the answer.
    ctx.set('Access-Control-Allow-Credentials', 'true');
  };

  return {
    answer,
    /** Answers a browser's preflight (OPTIONS); the request it announces is authorized when it comes. */
    preflight(ctx: Context) {
      answer(ctx);
      ctx.set('Allow', 'POST, OPTIONS');
      if (ctx.get('origin')) {
        ctx.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
        ctx.set('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
        // Chrome asks this of a public page calling a private address (a UI behind a public name, the API inside).
        if (ctx.get('access-control-request-private-network') === 'true') ctx.set('Access-Control-Allow-Private-Network', 'true');
      }
      ctx.status = 204;
    },
  };
}

const digest = (value: string) => crypto.createHash('sha256').update(value, 'utf8').digest();
/** Constant time whatever the lengths: the digests are compared, not the strings. */
const sameSecret = (given: string | undefined, expected: string) => given !== undefined && crypto.timingSafeEqual(digest(given), digest(expected));

/**
 * ctx.ip is not enough: the app trusts X-Forwarded-For (proxy: true), which any caller can send. The socket must be
 * loopback and so must every hop a local proxy forwarded for.
 */
function fromLoopback(ctx: Context): boolean {
  if (ctx.get('forwarded') || ctx.get('x-real-ip')) return false;
  const hops = ctx.get('x-forwarded-for').split(',').map((hop) => hop.trim()).filter(Boolean);
  return [ctx.req.socket.remoteAddress ?? '', ...hops].every((address) => LOOPBACK_ADDRESS.test(address));
}

/**
 * Lets a decode or encode through: with CODEC_TOKEN, the token as `Authorization: Bearer <token>` or as the path
 * segment before `/decode` (the Web UI cannot add headers without an identity provider); without it, nobody in
 * production, loopback callers otherwise. Throws 401 `unauthorized` or 403 `codec_disabled`.
 */
export function authorizeCodec(ctx: Context, config: CodecConfig, pathToken: string | undefined): void {
  if (config.CODEC_TOKEN) {
    const bearer = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1]?.trim();
    if (sameSecret(pathToken, config.CODEC_TOKEN) || sameSecret(bearer, config.CODEC_TOKEN)) return;
    throw unauthorized('the codec endpoint needs CODEC_TOKEN, as "Authorization: Bearer <token>" or in the path (/codec/<token>/decode)');
  }
  if (config.NODE_ENV === 'production') throw forbidden('the codec endpoint is off: set CODEC_TOKEN to turn it on', 'codec_disabled');
  if (!fromLoopback(ctx)) throw forbidden('without CODEC_TOKEN the codec endpoint answers only callers on this machine: set CODEC_TOKEN', 'codec_disabled');
}
