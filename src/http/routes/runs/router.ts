import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import type { AppDeps } from '../../deps';
import { RUN_LIST_DEFAULT_LIMIT, pageRequest, sendRenderedPage } from '../../presenters/page';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { approvalBody, approvalId, inputBody, inputId, replayBody, runListQuery, runName, statusesOf, variantAParameters } from './schema';
import type { RunService } from './service';
import type { RunIdentity } from '../../../contract/types';

/** Run URLs name the owner (not `~`) so they stay right whoever triggered the run with a signed URL. */
export const runUrlA = (base: string, owner: string, task: string, run: string) => `${base}/api/profiles/${owner}/default/tasks/${task}/runs/${run}`;
export const runUrlB = (base: string, owner: string, profile: string, task: string, run: string) => `${base}/api/runs/${owner}/${profile}/${task}/${run}`;

/** Variant A's trigger, as registered (under `/api`): counted by TRIGGER_LIMIT_PER_MINUTE, not as a write. */
export const VARIANT_A_TRIGGER_ROUTE = '/profiles/:user/:profile/tasks/:task/runs/:run';

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
    const query = parse(runListQuery, { status: ctx.query.status, replays: ctx.query.replays }, 'query');
    await runs.loadTask(where.owner, where.profile, where.task);
    sendRenderedPage(ctx, await runs.list(where, pageRequest(ctx, RUN_LIST_DEFAULT_LIMIT), statusesOf(query), query.replays === 'false' ? { replays: false } : {}));
  };

  router.put(VARIANT_A_TRIGGER_ROUTE, async (ctx) => {
    const where = variantA(ctx);
    const run = parse(runName, ctx.params.run, 'path.run');
    const parameters = variantAParameters(ctx.request.body);
    const task = await runs.loadTaskForTrigger(where.owner, where.profile, where.task);
    await runs.trigger(ctx, task, run, parameters, runUrlA(base, where.owner, where.task, run));
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

  // One run, by either variant's path: delete it (docs/runs.md, "Deleting runs"), cancel it ("Cancelling a run"),
  // decide an approval ("Tool approvals"), answer an MCP server's question (docs/mcp.md, "Inputs"), follow it as
  // events ("Following a run live"), replay it and diff a replay (docs/replays.md).
  const runPaths = [
    { path: '/profiles/:user/:profile/tasks/:task/runs/:run', where: variantA, url: (id: RunIdentity) => runUrlA(base, id.owner, id.task, id.run) },
    { path: '/runs/:user/:profile/:task/:run', where: variantB, url: (id: RunIdentity) => runUrlB(base, id.owner, id.profile, id.task, id.run) },
  ];
  for (const { path, where, url } of runPaths) {
    const runOf = (ctx: Context): RunIdentity => ({ ...where(ctx), run: parse(runName, ctx.params.run, 'path.run') });
    const accepted = (ctx: Context, id: RunIdentity) => {
      ctx.status = 202;
      ctx.body = { url: url(id) };
    };
    router.delete(path, async (ctx) => {
      await runs.deleteRun(runOf(ctx));
      ctx.status = 204;
    });
    router.get(`${path}/events`, (ctx) => runs.events.stream(ctx, runOf(ctx)));
    router.post(`${path}/cancel`, async (ctx) => {
      const id = runOf(ctx);
      await runs.cancel(id, ctx.state.username as string);
      accepted(ctx, id);
    });
    router.post(`${path}/approvals/:approval`, async (ctx) => {
      const id = runOf(ctx);
      const approval = parse(approvalId, ctx.params.approval, 'path.approval');
      await runs.decide(id, approval, parse(approvalBody, ctx.request.body), ctx.state.username as string);
      accepted(ctx, id);
    });
    // Replays (docs/replays.md): 201 with the replay's URL (200 when its name was used before), as a trigger answers.
    router.post(`${path}/replays`, async (ctx) => {
      const id = runOf(ctx);
      const { identity, created } = await runs.replay(id, parse(replayBody, ctx.request.body ?? {}));
      ctx.status = created ? 201 : 200;
      ctx.body = { url: url(identity) };
    });
    router.get(`${path}/diff`, async (ctx) => {
      ctx.set('Cache-Control', 'private, no-cache');
      ctx.body = await runs.diff(runOf(ctx));
    });
    router.post(`${path}/inputs/:input`, async (ctx) => {
      const id = runOf(ctx);
      const input = parse(inputId, ctx.params.input, 'path.input');
      await runs.answer(id, input, parse(inputBody, ctx.request.body), ctx.state.username as string);
      accepted(ctx, id);
    });
  }
  return router;
}
