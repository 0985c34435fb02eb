import crypto from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { badRequest, dependencyUnavailable, forbidden, notFound } from '../../../errors';
import { unavailableDependency } from '../../../dependencies';
import { parseSignedUrl, revokeAllUrls, revokeUrl, signatureValid, signTaskUrl, verifySignedUrl } from '../../../store/signed-urls';
import type { AppDeps } from '../../deps';
import { parse } from '../../validate';
import { runUrlB } from '../runs/router';
import { revokeBody, runIdHeader } from '../runs/schema';
import type { RunService } from '../runs/service';
import { ownerFromPath } from '../users/owner';

/** Session-authenticated: issue and revoke a task's signed URLs. */
export function signedUrlsRouter(deps: AppDeps, runs: RunService): Router {
  const router = new Router();
  const { config } = deps;
  const taskOf = async (ctx: Context) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `task "${ctx.params.profile}/${ctx.params.task}"`);
    return runs.loadTask(owner, ctx.params.profile!, ctx.params.task!);
  };

  router.post('/tasks/:user/:profile/:task/signed', async (ctx) => {
    const task = await taskOf(ctx);
    ctx.body = { url: signTaskUrl({ secret: config.SIGNING_SECRET, publicUrl: config.PUBLIC_URL, ttlDays: config.SIGNED_URL_TTL_DAYS }, task) };
  });
  /** Revokes every signed URL of the task issued so far. */
  router.delete('/tasks/:user/:profile/:task/signed', async (ctx) => {
    const task = await taskOf(ctx);
    await revokeAllUrls(deps.db.models, task._id);
    runs.forgetRevocation(`task:${task._id}`);
    ctx.status = 204;
  });
  /** Revokes one signed URL: `{ "url": "<signed url>" }`. */
  router.post('/tasks/:user/:profile/:task/signed/revoke', async (ctx) => {
    const task = await taskOf(ctx);
    const { url } = parse(revokeBody, ctx.request.body);
    const parts = parseSignedUrl(url);
    // The signature covers the owner, profile and task names and the task's _id: a URL of any other task fails it.
    if (!parts || !signatureValid(config.SIGNING_SECRET, parts, task)) throw badRequest('url: not a signed URL of this task');
    await revokeUrl(deps.db.models, task._id, parts.id);
    runs.forgetRevocation(parts.id);
    ctx.status = 204;
  });
  return router;
}

/**
 * No session: the signed URL is the credential. Any failure of the URL (altered, expired, revoked, task gone) is a
 * 403 that says which, and starts nothing; only then is the body looked at.
 */
export function signedTriggerRouter(deps: AppDeps, runs: RunService): Router {
  const router = new Router();
  const { config } = deps;
  router.post('/signed/tasks/:owner/:profile/:task', async (ctx) => {
    const parts = parseSignedUrl(ctx.originalUrl);
    if (!parts) throw forbidden('the signed URL is not valid', 'signed_url_invalid');
    const task = await beforeTheRun(ctx, () => runs.findTaskForTrigger(parts.owner, parts.profile, parts.task));
    if (!task) throw forbidden('the signed URL is not valid', 'signed_url_invalid');
    const verdict = await beforeTheRun(ctx, () => verifySignedUrl(runs.revocations, config.SIGNING_SECRET, parts, task));
    if (!verdict.ok) throw forbidden(verdict.message, verdict.code);
    const run = parse(runIdHeader, ctx.get('run-id') || undefined, 'header.run-id') ?? `run-${Date.now()}-${crypto.randomBytes(4).toString('hex')}`;
    const payload = ctx.request.body as Record<string, unknown>;
    await runs.trigger(ctx, task, run, payload, runUrlB(config.PUBLIC_URL, task.owner, task.profile, task.name, run));
  });
  router.all('/signed/tasks/:owner/:profile/:task', () => {
    throw notFound('route (signed URLs take POST)');
  });
  return router;
}

/** A lookup before any run is recorded: a dependency that does not answer makes a 503 saying nothing was started. */
async function beforeTheRun<T>(ctx: Context, lookup: () => Promise<T>): Promise<T> {
  try {
    return await lookup();
  } catch (err) {
    const dependency = unavailableDependency(err);
    if (!dependency) throw err;
    const requested = ctx.get('run-id');
    throw dependencyUnavailable(dependency, requested ? { run: requested } : undefined, 'nothing was started: retry');
  }
}
