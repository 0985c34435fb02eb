import Router, { type RouterContext } from '@koa/router';
import { notFound } from '../../../errors';
import { modelDeprecation } from '../../../model-deprecations';
import { DEFAULT_PROFILE, getProfile } from '../../../store/profiles';
import { deleteTaskCascade } from '../../../temporal/task-cascade';
import { findTask, listTasks, saveTask, type TaskRef } from '../../../store/tasks';
import { listDeliveries } from '../../../store/webhooks';
import type { AppDeps, AuthState } from '../../deps';
import { pageRequest, sendPage } from '../../presenters/page';
import { presentTask } from '../../presenters/task';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { listQuery, parseTaskBody, profileParams, taskParams, type TaskWarning, type Variant } from './schema';

type Ctx = RouterContext<AuthState>;

/**
 * Both path families of the contract over one store:
 * - Variant A: `/api/profiles/:user/default/tasks[/:task]` (the default profile only, runner openai, one model);
 * - Variant B: `/api/tasks/:user[/:profile[/:task]]` (any profile, openai or anthropic, any model).
 * `:user` is `~` or the session's username; anything else is a 404.
 */
/** `on.saved` / `on.deleted` let the run paths drop what they cached of the task and its runs. */
export function tasksRouter(deps: AppDeps, on: { saved?: (ref: TaskRef) => void; deleted?: (ref: TaskRef) => void } = {}) {
  const { models } = deps.db;
  const router = new Router<AuthState>();

  const taskRef = (ctx: Ctx, profile: string | undefined): TaskRef => {
    const owner = ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.task}"`);
    const p = parse(taskParams, { profile, task: ctx.params.task });
    return { owner, profile: p.profile, name: p.task };
  };

  const readTask = async (ctx: Ctx, profile: string | undefined) => {
    const ref = taskRef(ctx, profile);
    const task = await findTask(models, ref);
    if (!task) throw notFound(`task "${ref.profile}/${ref.name}"`);
    ctx.body = presentTask(task);
  };

  const putTask = async (ctx: Ctx, profile: string | undefined, variant: Variant) => {
    const ref = taskRef(ctx, profile);
    const input = parseTaskBody(ctx.request.body as Record<string, unknown>, variant, deps.config);
    const { task, created, webhookSecret } = await saveTask({ models, keyring: deps.keyring, config: deps.config }, ref, input.spec, input.key, input.webhook);
    on.saved?.(ref);
    ctx.status = created ? 201 : 200;
    const body = presentTask(task);
    const warnings = taskWarnings(task);
    // A webhook secret the server made is shown in this answer only (docs/webhooks.md).
    ctx.body = {
      ...body,
      ...(webhookSecret && body.webhook ? { webhook: { ...body.webhook, secret: webhookSecret } } : {}),
      // Only when there is one: clients that know nothing of warnings see the body they always saw.
      ...(warnings.length > 0 ? { warnings } : {}),
    };
  };

  /** `GET <task path>/webhook/deliveries`: the task's latest webhook delivery attempts, newest first. */
  const webhookDeliveries = async (ctx: Ctx, profile: string | undefined) => {
    const ref = taskRef(ctx, profile);
    const task = await findTask(models, ref);
    if (!task) throw notFound(`task "${ref.profile}/${ref.name}"`);
    ctx.body = { deliveries: await listDeliveries(models, task._id) };
  };

  const deleteTask = async (ctx: Ctx, profile: string | undefined) => {
    const ref = taskRef(ctx, profile);
    const result = await deleteTaskCascade({ models, temporal: deps.temporal, logger: deps.logger }, ref);
    if (!result.deleted) throw notFound(`task "${ref.profile}/${ref.name}"`);
    on.deleted?.(ref);
    ctx.status = 204;
  };

  const listOf = async (ctx: Ctx, profile: string | undefined) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    if (profile !== undefined) {
      const p = parse(profileParams, { profile });
      await getProfile(models, owner, p.profile);
    }
    const { deprecated } = parse(listQuery, { deprecated: ctx.query.deprecated }, 'query');
    sendPage(ctx, await listTasks(models, owner, profile, pageRequest(ctx), { deprecated: deprecated === 'true', profiles: ctx.state.token?.profiles }), presentTask);
  };

  // Variant A: the default profile is fixed in the path.
  router.get(`/profiles/:user/${DEFAULT_PROFILE}/tasks`, (ctx) => listOf(ctx, DEFAULT_PROFILE));
  router.get(`/profiles/:user/${DEFAULT_PROFILE}/tasks/:task`, (ctx) => readTask(ctx, DEFAULT_PROFILE));
  router.put(`/profiles/:user/${DEFAULT_PROFILE}/tasks/:task`, (ctx) => putTask(ctx, DEFAULT_PROFILE, 'A'));
  router.delete(`/profiles/:user/${DEFAULT_PROFILE}/tasks/:task`, (ctx) => deleteTask(ctx, DEFAULT_PROFILE));
  router.get(`/profiles/:user/${DEFAULT_PROFILE}/tasks/:task/webhook/deliveries`, (ctx) => webhookDeliveries(ctx, DEFAULT_PROFILE));

  // Variant B: profile-scoped; `GET /api/tasks/~` lists every profile's tasks (the Python client filters by slug).
  router.get('/tasks/:user', (ctx) => listOf(ctx, undefined));
  router.get('/tasks/:user/:profile', (ctx) => listOf(ctx, ctx.params.profile));
  router.get('/tasks/:user/:profile/:task', (ctx) => readTask(ctx, ctx.params.profile));
  router.put('/tasks/:user/:profile/:task', (ctx) => putTask(ctx, ctx.params.profile, 'B'));
  router.delete('/tasks/:user/:profile/:task', (ctx) => deleteTask(ctx, ctx.params.profile));
  router.get('/tasks/:user/:profile/:task/webhook/deliveries', (ctx) => webhookDeliveries(ctx, ctx.params.profile));

  return router;
}

/** What a save answers beside the task: its model's announced end of life, if it has one. */
function taskWarnings(task: { runner: string; model: string }): TaskWarning[] {
  const deprecation = modelDeprecation(task.runner, task.model);
  return deprecation ? [{ code: 'model_deprecated', field: `${task.runner}.model`, ...deprecation }] : [];
}
