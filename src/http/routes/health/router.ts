import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { AppDeps } from '../../deps';
import { exposition } from '../../../metrics';
import { checkReadiness, dependencyChecks } from '../../../readiness';

/**
 * The operator's endpoints, without a session: `/healthz` (liveness: the process answers, nothing else is asked),
 * `/readyz` (MongoDB and Temporal answer, each within DEPENDENCY_TIMEOUT_MS) and `/metrics` (Prometheus text).
 */
export function healthRouter(deps: Pick<AppDeps, 'config' | 'logger' | 'db' | 'temporal'>, metrics: Registry): Router {
  const router = new Router();
  const timeoutMs = deps.config.DEPENDENCY_TIMEOUT_MS;
  const checks = dependencyChecks(deps, timeoutMs);

  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  // The answer is the checks' own body, not an error body: a load balancer or an operator reads every field.
  router.get('/readyz', async (ctx) => {
    const { ready, body } = await checkReadiness(checks, timeoutMs, deps.logger);
    ctx.status = ready ? 200 : 503;
    if (!ready) ctx.set('Retry-After', '1');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  });

  router.get('/metrics', async (ctx) => {
    const { contentType, text } = await exposition(metrics);
    ctx.type = contentType;
    ctx.body = text;
  });
  return router;
}
