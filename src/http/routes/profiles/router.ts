import Router from '@koa/router';
import { notFound } from '../../../errors';
import { createProfile, deleteProfile, findProfile, findPublicProfile, listProfiles, listPublicProfiles } from '../../../store/profiles';
import type { AppDeps, AuthState } from '../../deps';
import { pageRequest, sendPage } from '../../presenters/page';
import { presentProfile } from '../../presenters/profile';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { createProfileBody, profileParams } from './schema';

export function profilesRouter(deps: AppDeps) {
  const { models } = deps.db;
  const router = new Router<AuthState>();

  router.get('/profiles', async (ctx) => {
    sendPage(ctx, await listPublicProfiles(models, pageRequest(ctx)), presentProfile);
  });

  router.get('/profiles/:user', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    sendPage(ctx, await listProfiles(models, owner, pageRequest(ctx)), presentProfile);
  });

  // The one read open to other users: a public profile.
  router.get('/profiles/:user/:profile', async (ctx) => {
    const { profile } = parse(profileParams, ctx.params);
    const me = ctx.state.username;
    const own = ctx.params.user === '~' || ctx.params.user === me;
    const found = own ? await findProfile(models, me, profile) : await findPublicProfile(models, ctx.params.user!, profile);
    if (!found) throw notFound(`profile "${ctx.params.user}/${profile}"`);
    ctx.body = presentProfile(found);
  });

  router.post('/profiles/:user/:profile', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    const { profile } = parse(profileParams, ctx.params);
    const body = parse(createProfileBody, ctx.request.body);
    const created = await createProfile(models, { owner, name: profile, description: body.description, is_public: body.is_public });
    ctx.status = 201;
    ctx.body = presentProfile(created);
  });

  router.delete('/profiles/:user/:profile', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `profile "${ctx.params.user}/${ctx.params.profile}"`);
    const { profile } = parse(profileParams, ctx.params);
    await deleteProfile(models, owner, profile);
    ctx.status = 204;
  });

  return router;
}
