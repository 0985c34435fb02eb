import Router from '@koa/router';
import { notFound } from '../../../errors';
import { findUser } from '../../../store/users';
import type { AppDeps, AuthState } from '../../deps';
import { ownerFromPath } from './owner';
import type { UserView } from './schema';

export function usersRouter(deps: AppDeps) {
  const router = new Router<AuthState>();

  router.get('/users/:user', async (ctx) => {
    const username = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    const user = await findUser(deps.db.models, username);
    // A live session whose user record is gone (deleted by an operator) reads like any unknown user.
    if (!user) throw notFound(`user "${ctx.params.user}"`);
    const view: UserView = { username: user.username, emails: user.emails };
    ctx.body = view;
  });

  return router;
}
