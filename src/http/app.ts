import Koa from 'koa';
import Router from '@koa/router';
import { Counter } from 'prom-client';
import type { AppDeps } from './deps';
import { AppError } from '../errors';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { requestDeadline } from './middleware/deadline';
import { requireSession } from './middleware/auth';
import { accessLog } from './middleware/access-log';
import { refuseCrossSite } from './middleware/same-site';
import { requestMetrics } from './middleware/metrics';
import { traceRequests } from './middleware/trace';
import { usersRouter } from './routes/users/router';
import { profilesRouter } from './routes/profiles/router';
import { tasksRouter } from './routes/tasks/router';
import { runsRouter, VARIANT_A_TRIGGER_ROUTE } from './routes/runs/router';
import { APP_CLOSING } from './routes/runs/events';
import { runService } from './routes/runs/service';
import { signedTriggerRouter, signedUrlsRouter } from './routes/signed/router';
import { servletsRouter } from './routes/servlets/router';
import { moduleUploadBypass } from './routes/servlets/module-upload';
import { installationsRouter } from './routes/installations/router';
import { contentRouter } from './routes/content/router';
import { schedulesRouter } from './routes/schedules/router';
import { evalsRouter } from './routes/evals/router';
import { approvalsRouter } from './routes/approvals/router';
import { tokensRouter } from './routes/tokens/router';
import { codecRouter } from './routes/codec/router';
import { healthRouter } from './routes/health/router';
import { docsRouter } from './routes/docs/router';
import { consoleRouter, signInRouter } from './routes/sign-in/router';
import { consoleRouter as consoleAppRouter } from './routes/console/router';
import { createRuns } from '../runs';
import { createRunReader } from '../runs/live-reader';
import { createRegistry } from '../metrics';
import { createRateLimits } from './rate-limits';
import { mcpServer } from '../mcp-server/http';
import { mcpRouter } from './routes/mcp/router';

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** A path that exists, asked with a method it does not take: 405 in the error shape, with the router's `Allow`. */
function allowedMethods(router: Router): Koa.Middleware {
  const allowed = router.allowedMethods() as unknown as Koa.Middleware;
  return async (ctx, next) => {
    await allowed(ctx, next);
    if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null) {
      throw new AppError(405, 'method_not_allowed', `method: ${ctx.method} is not allowed on this path (Allow: ${ctx.response.get('Allow') || 'none'})`);
    }
  };
}

/** A method the service knows nothing of (TRACE, PROPFIND, M-SEARCH...) is a 405 on any path. */
function knownMethods(): Koa.Middleware {
  return async (ctx, next) => {
    if (!KNOWN_METHODS.has(ctx.method)) {
      ctx.set('Allow', [...KNOWN_METHODS].join(', '));
      throw new AppError(405, 'method_not_allowed', `method: ${ctx.method} is not one this service takes`);
    }
    await next();
  };
}

/** Builds the API without listening: entry points call `listen`, tests use port 0. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;

  const reader = createRunReader(deps.temporal, { cacheMs: deps.config.LIVE_RUN_CACHE_MS, waitMs: deps.config.LIVE_READ_WAIT_MS });
  const limits = createRateLimits(deps.db, deps.config);
  // The run's lifecycle, built once for this process (src/runs/).
  const lifecycle = createRuns({ models: deps.db.models, temporal: deps.temporal, logger: deps.logger, config: deps.config });
  const runs = runService(deps, reader, limits, lifecycle);
  // The server's close (server.ts) ends the open event streams: their clients reconnect to another process.
  const mcp = mcpServer(deps, runs);
  app.once(APP_CLOSING, () => {
    runs.events.close();
    mcp.close();
  });
  const metrics = createRegistry();
  // Read from the reader when scraped: the benchmark divides it by the live polls it made.
  new Counter({
    name: 'ptr_live_run_queries_total',
    help: 'Temporal queries sent to read live runs.',
    registers: [metrics],
    collect() {
      this.reset();
      this.inc(reader.queryCount());
    },
  });

  const open = new Router();
  open.use(healthRouter(deps, metrics).routes());
  open.use(signedTriggerRouter(deps, runs).routes());
  open.use(codecRouter(deps).routes());
  open.use(docsRouter(deps).routes());
  open.use(signInRouter(deps).routes());
  open.use(consoleAppRouter().routes());

  const api = new Router({ prefix: '/api' });
  api.use(requireSession(deps.db.models, deps.config.SESSION_CACHE_MS));
  api.use(limits.writes(new Set([`PUT /api${VARIANT_A_TRIGGER_ROUTE}`])));
  api.use(usersRouter(deps).routes());
  api.use(profilesRouter(deps).routes());
  api.use(tasksRouter(deps, { saved: (ref) => runs.taskSaved(ref), deleted: (ref) => runs.forgetTask(ref) }).routes());
  api.use(runsRouter(deps, runs).routes());
  api.use(signedUrlsRouter(deps, runs).routes());
  api.use(servletsRouter(deps).routes());
  api.use(installationsRouter(deps).routes());
  api.use(contentRouter(deps).routes());
  api.use(schedulesRouter(deps, runs).routes());
  api.use(evalsRouter(deps).routes());
  api.use(approvalsRouter(deps).routes());
  api.use(mcpRouter(deps).routes());
  api.use(tokensRouter(deps).routes());
  api.use(consoleRouter(deps).routes());

  if (deps.traced) app.use(traceRequests());
  app.use(requestMetrics(metrics));
  app.use(accessLog(deps.logger));
  app.use(errorHandler(deps.logger));
  // Before any body is read: a write the cookie would authenticate, sent from another site, is refused.
  app.use(refuseCrossSite(deps.config.PUBLIC_URL));
  // `/mcp/<profile>`: reads its own body and answers JSON-RPC errors itself (src/mcp-server/).
  app.use(mcp.middleware);
  app.use(moduleUploadBypass());
  app.use(jsonBody({ maxBytes: deps.config.BODY_LIMIT_BYTES, maxDepth: deps.config.JSON_MAX_DEPTH }));
  app.use(requestDeadline({ conn: deps.db.conn, logger: deps.logger, deadlineMs: deps.config.REQUEST_DEADLINE_MS }));
  app.use(knownMethods());
  app.use(open.routes());
  app.use(allowedMethods(open));
  app.use(api.routes());
  app.use(allowedMethods(api));
  return app;
}
