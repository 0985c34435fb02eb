import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import type { AppDeps } from '../../deps';
import { RUN_LIST_DEFAULT_LIMIT, pageRequest, sendRenderedPage } from '../../presenters/page';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { runName, variantATrigger } from './schema';
import type { RunService } from './service';

/** Run URLs name the owner (not `~`) so they stay right whoever triggered the run with a signed URL. */
export const runUrlA = (base: string, owner: string, task: string, run: string) => `${base}/api/profiles/${owner}/default/tasks/${task}/runs/${run}`;
export const runUrlB = (base: string, owner: string, profile: string, task: string, run: string) => `${base}/api/runs/${owner}/${profile}/${task}/${run}`;

/** Variant A (default profile, PUT trigger) and Variant B (profile-scoped) run reads and lists. */
export function runsRouter(deps: AppDeps, runs: RunService): Router {
  const router = new Router();
  const base = deps.config.PUBLIC_URL;

  const variantA = (ctx: Context) => {
    if (ctx.params.profile !== 'default') throw notFound(`profile "${ctx.params.profile}" (Variant A has only "default")`);
    return { owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.task}"`), profile: 'default', task: ctx.params.task! };
  };
  const variantB = (ctx: Context) => ({
    owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.profile}/${ctx.params.task}"`),
    profile: ctx.params.profile!,
    task: ctx.params.task!,
  });
  const list = async (ctx: Context, where: { owner: string; profile: string; task: string }) => {
    await runs.loadTask(where.owner, where.profile, where.task);
    sendRenderedPage(ctx, await runs.list(where, pageRequest(ctx, RUN_LIST_DEFAULT_LIMIT)));
  };

  router.put('/profiles/:user/:profile/tasks/:task/runs/:run', async (ctx) => {
    const where = variantA(ctx);
    const run = parse(runName, ctx.params.run, 'path.run');
    const body = parse(variantATrigger, ctx.request.body);
    const task = await runs.loadTaskForTrigger(where.owner, where.profile, where.task);
    await runs.trigger(ctx, task, run, body.parameters, runUrlA(base, where.owner, where.task, run));
  });
  router.get('/profiles/:user/:profile/tasks/:task/runs', (ctx) => list(ctx, variantA(ctx)));
  router.get('/profiles/:user/:profile/tasks/:task/runs/:run', async (ctx) => {
    const where = variantA(ctx);
    await runs.read(ctx, { ...where, run: ctx.params.run! });
  });

  router.get('/runs/:user/:profile/:task', (ctx) => list(ctx, variantB(ctx)));
  router.get('/runs/:user/:profile/:task/:run', async (ctx) => {
    const where = variantB(ctx);
    await runs.read(ctx, { ...where, run: ctx.params.run! });
  });
  return router;
}
