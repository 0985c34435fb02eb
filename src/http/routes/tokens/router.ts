import Router from '@koa/router';
import { badRequest, notFound } from '../../../errors';
import { findProfile } from '../../../store/profiles';
import { createToken, listTokens, revokeToken, type TokenRecord } from '../../../store/tokens';
import type { AppDeps, AuthState } from '../../deps';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { createTokenBody, tokenParams, type CreatedTokenView, type TokenView } from './schema';

const present = (t: TokenRecord): TokenView => ({
  name: t.name,
  profiles: t.profiles,
  scopes: t.scopes,
  created_at: t.created_at.toISOString(),
  expires_at: t.expires_at.toISOString(),
  last_used_at: t.last_used_at ? t.last_used_at.toISOString() : null,
});

/**
 * `POST|GET /api/tokens/:user`, `DELETE /api/tokens/:user/:name`: the user's access tokens (docs/tokens.md). Only a
 * session reaches these routes (the auth middleware answers a token `session_required`): a token cannot make tokens.
 */
export function tokensRouter(deps: AppDeps) {
  const { models } = deps.db;
  const router = new Router<AuthState>();

  router.post('/tokens/:user', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    const body = parse(createTokenBody, ctx.request.body);
    // A token for a profile that does not exist is a typo more often than a plan.
    for (const [i, profile] of (body.profiles ?? []).entries()) {
      if (!(await findProfile(models, owner, profile))) throw badRequest(`profiles.${i}: you have no profile "${profile}"`);
    }
    const made = await createToken(models, owner, { name: body.name, profiles: body.profiles, scopes: body.scopes, expiresInDays: body.expires_in_days });
    const { last_used_at: _never, ...shown } = present(made);
    const view: CreatedTokenView = { ...shown, token: made.token };
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = view;
  });

  router.get('/tokens/:user', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    ctx.body = (await listTokens(models, owner)).map(present);
  });

  router.delete('/tokens/:user/:name', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `token "${ctx.params.name}"`);
    const { name } = parse(tokenParams, { name: ctx.params.name }, 'path');
    if (!(await revokeToken(models, owner, name))) throw notFound(`token "${name}"`);
    ctx.status = 204;
  });

  return router;
}
