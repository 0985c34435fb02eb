import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import type { AppDeps } from '../../deps';
import { pageRequest, sendPage } from '../../presenters/page';
import { parse } from '../../validate';
import { runUrlA, runUrlB } from '../runs/router';
import { ownerFromPath } from '../users/owner';
import { evalBody, evalId } from './schema';
import { evalService, type EvalUrls, type TaskOf } from './service';

/** Eval URLs name the owner, as run URLs do. */
export const evalUrlA = (base: string, t: TaskOf, id: string) => `${base}/api/profiles/${t.owner}/default/tasks/${t.task}/evals/${id}`;
export const evalUrlB = (base: string, t: TaskOf, id: string) => `${base}/api/tasks/${t.owner}/${t.profile}/${t.task}/evals/${id}`;

/**
 * A task's evals (docs/evals.md), on either variant's task path: `POST|GET <task path>/evals`,
 * `GET|DELETE <task path>/evals/:id`, `POST <task path>/evals/:id/cancel`.
 */
export function evalsRouter(deps: AppDeps): Router {
  const router = new Router();
  const evals = evalService(deps);
  const base = deps.config.PUBLIC_URL;

  const families: Array<{ path: string; where: (ctx: Context) => TaskOf; urls: EvalUrls }> = [
    {
      path: '/profiles/:user/:profile/tasks/:task/evals',
      where: (ctx) => {
        if (ctx.params.profile !== 'default') throw notFound(`profile "${ctx.params.profile}" (Variant A has only "default")`);
        return { owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.task}"`), profile: 'default', task: ctx.params.task! };
      },
      urls: { eval: (t, id) => evalUrlA(base, t, id), run: (t, run) => runUrlA(base, t.owner, t.task, run) },
    },
    {
      path: '/tasks/:user/:profile/:task/evals',
      where: (ctx) => ({ owner: ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.profile}/${ctx.params.task}"`), profile: ctx.params.profile!, task: ctx.params.task! }),
      urls: { eval: (t, id) => evalUrlB(base, t, id), run: (t, run) => runUrlB(base, t.owner, t.profile, t.task, run) },
    },
  ];

  for (const { path, where, urls } of families) {
    const idOf = (ctx: Context) => parse(evalId, ctx.params.id, 'path.id');
    router.post(path, async (ctx) => {
      const t = where(ctx);
      const body = parse(evalBody, ctx.request.body ?? {});
      ctx.status = 201;
      ctx.body = await evals.create(t, body, urls);
    });
    router.get(path, async (ctx) => {
      const page = await evals.list(where(ctx), pageRequest(ctx), urls);
      sendPage(ctx, page, (e) => e);
    });
    router.get(`${path}/:id`, async (ctx) => {
      ctx.set('Cache-Control', 'private, no-cache');
      ctx.body = await evals.read(where(ctx), idOf(ctx), urls);
    });
    router.post(`${path}/:id/cancel`, async (ctx) => {
      const t = where(ctx);
      const id = idOf(ctx);
      await evals.cancel(t, id, ctx.state.username as string);
      ctx.status = 202;
      ctx.body = { url: urls.eval(t, id) };
    });
    router.delete(`${path}/:id`, async (ctx) => {
      await evals.delete(where(ctx), idOf(ctx));
      ctx.status = 204;
    });
  }
  return router;
}
