import Router from '@koa/router';
import { AppError } from '../../../errors';
import { createSession, revokeSessions } from '../../../store/sessions';
import { createSignInLink, signInUrl, useSignInLink } from '../../../store/sign-in-links';
import type { AppDeps, AuthState } from '../../deps';
import { presentedSession } from '../../middleware/auth';
import { parse } from '../../validate';
import { SIGN_IN_LINK_INVALID, signInBody, signInLinkBody, type ConsoleSettingsView, type SignInLinkView } from './schema';

/**
 * The session cookie as the contract gives it (docs/console.md): `HttpOnly; SameSite=Lax`, `Secure` when PUBLIC_URL
 * is https. Written by hand, not with koa's cookies, which refuse `Secure` on a request that came over http, as it
 * does from a proxy that ends TLS.
 */
function sessionCookie(value: string, publicUrl: string, clear = false): string {
  const secure = publicUrl.startsWith('https:') ? ['Secure'] : [];
  const expired = clear ? ['Max-Age=0', 'Expires=Thu, 01 Jan 1970 00:00:00 GMT'] : [];
  return [`sessionId=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', ...secure, ...expired].join('; ');
}

/**
 * No session: `POST /api/sign-in {token}` exchanges a one-time sign-in link for a new session in the cookie (204), or
 * answers 401 `sign_in_link_invalid`. The token is never logged nor repeated in an answer.
 */
export function signInRouter(deps: Pick<AppDeps, 'config' | 'db'>): Router {
  const router = new Router();
  const { config } = deps;
  const { models } = deps.db;
  router.post('/api/sign-in', async (ctx) => {
    const { token } = parse(signInBody, ctx.request.body);
    const link = await useSignInLink(models, token);
    if (!link) throw new AppError(401, 'sign_in_link_invalid', SIGN_IN_LINK_INVALID);
    const session = await createSession(models, link.username, config.SESSION_TTL_HOURS);
    ctx.append('Set-Cookie', sessionCookie(session.id, config.PUBLIC_URL));
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 204;
  });
  return router;
}

/**
 * Session routes of the console: `POST /api/sign-in-links` (a link for the caller's own user), `POST /api/sign-out`
 * (revokes the session presented and clears the cookie) and `GET /api/console/settings`.
 */
export function consoleRouter(deps: Pick<AppDeps, 'config' | 'db'>): Router<AuthState> {
  const router = new Router<AuthState>();
  const { config } = deps;
  const { models } = deps.db;

  router.post('/sign-in-links', async (ctx) => {
    parse(signInLinkBody, ctx.request.body);
    const link = await createSignInLink(models, ctx.state.username);
    const view: SignInLinkView = { url: signInUrl(config.PUBLIC_URL, link.token), expires_at: link.expires_at.toISOString() };
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = view;
  });

  // Its lookups are cached (middleware/auth.ts): API processes may accept it for up to SESSION_CACHE_MS more.
  router.post('/sign-out', async (ctx) => {
    await revokeSessions(models, ctx.state.username, { id: presentedSession(ctx)! });
    ctx.append('Set-Cookie', sessionCookie('', config.PUBLIC_URL, true));
    ctx.status = 204;
  });

  router.get('/console/settings', (ctx) => {
    const view: ConsoleSettingsView = {
      username: ctx.state.username,
      temporal_ui_url: config.TEMPORAL_UI_URL?.replace(/\/+$/, '') ?? null,
      temporal_namespace: config.TEMPORAL_NAMESPACE,
    };
    ctx.body = view;
  });

  return router;
}
