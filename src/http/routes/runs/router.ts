import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import type { AppDeps } from '../../deps';
import { RUN_LIST_DEFAULT_LIMIT, pageRequest, sendRenderedPage } from '../../presenters/page';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { approvalBody, approvalId, runName, variantATrigger } from './schema';
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

  // Deleting a closed run (docs/runs.md, "Deleting runs"): 204, its name free again.
  const deleteRun = async (ctx: Context, where: { owner: string; profile: string; task: string }) => {
    await runs.deleteRun({ ...where, run: parse(runName, ctx.params.run, 'path.run') });
    ctx.status = 204;
  };
  router.delete('/profiles/:user/:profile/tasks/:task/runs/:run', (ctx) => deleteRun(ctx, variantA(ctx)));
  router.delete('/runs/:user/:profile/:task/:run', (ctx) => deleteRun(ctx, variantB(ctx)));

  // Run control (docs/runs.md, "Cancelling a run" and "Tool approvals"): 202 with the run's URL.
  const runOf = (ctx: Context, where: { owner: string; profile: string; task: string }) => ({ ...where, run: parse(runName, ctx.params.run, 'path.run') });
  const cancel = async (ctx: Context, where: { owner: string; profile: string; task: string }, url: (run: string) => string) => {
    const id = runOf(ctx, where);
    await runs.cancel(id, ctx.state.username as string);
    ctx.status = 202;
    ctx.body = { url: url(id.run) };
  };
  const decide = async (ctx: Context, where: { owner: string; profile: string; task: string }, url: (run: string) => string) => {
    const id = runOf(ctx, where);
    const approval = parse(approvalId, ctx.params.approval, 'path.approval');
    const body = parse(approvalBody, ctx.request.body);
    await runs.decide(id, approval, body, ctx.state.username as string);
    ctx.status = 202;
    ctx.body = { url: url(id.run) };
  };
  const urlA = (where: { owner: string; task: string }) => (run: string) => runUrlA(base, where.owner, where.task, run);
  const urlB = (where: { owner: string; profile: string; task: string }) => (run: string) => runUrlB(base, where.owner, where.profile, where.task, run);
  router.post('/profiles/:user/:profile/tasks/:task/runs/:run/cancel', (ctx) => {
    const where = variantA(ctx);
    return cancel(ctx, where, urlA(where));
  });
  router.post('/profiles/:user/:profile/tasks/:task/runs/:run/approvals/:approval', (ctx) => {
    const where = variantA(ctx);
    return decide(ctx, where, urlA(where));
  });
  router.post('/runs/:user/:profile/:task/:run/cancel', (ctx) => {
    const where = variantB(ctx);
    return cancel(ctx, where, urlB(where));
  });
  router.post('/runs/:user/:profile/:task/:run/approvals/:approval', (ctx) => {
    const where = variantB(ctx);
    return decide(ctx, where, urlB(where));
  });
  return router;
}
