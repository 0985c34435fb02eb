import { monitorEventLoopDelay } from 'node:perf_hooks';
import Koa from 'koa';
import Router from '@koa/router';
import type { AppDeps } from './deps';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { requireSession } from './middleware/auth';
import { accessLog } from './middleware/access-log';
import { usersRouter } from './routes/users/router';
import { profilesRouter } from './routes/profiles/router';
import { tasksRouter } from './routes/tasks/router';
import { runsRouter } from './routes/runs/router';
import { runService } from './routes/runs/service';
import { signedTriggerRouter, signedUrlsRouter } from './routes/signed/router';
import { servletsRouter } from './routes/servlets/router';
import { moduleUploadBypass } from './routes/servlets/module-upload';
import { installationsRouter } from './routes/installations/router';
import { contentRouter } from './routes/content/router';
import { codecRouter } from './routes/codec/router';
import { createRunReader } from '../temporal/run-reader';

/** Builds the API without listening: entry points call `listen`, tests use port 0. */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;

  const open = new Router();
  open.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  const reader = createRunReader(deps.temporal, { cacheMs: deps.config.LIVE_RUN_CACHE_MS, waitMs: deps.config.LIVE_READ_WAIT_MS });
  // How long requests wait for this process's event loop (a busy or starved API shows here before anywhere else).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const runs = runService(deps, reader);
  // Prometheus text format, for operators and the benchmark (how many Temporal queries live-run polls cost).
  open.get('/metrics', (ctx) => {
    ctx.type = 'text/plain; version=0.0.4';
    ctx.body = [
      '# HELP ptr_live_run_queries_total Temporal queries sent to read live runs.',
      '# TYPE ptr_live_run_queries_total counter',
      `ptr_live_run_queries_total ${reader.queryCount()}`,
      '# HELP ptr_event_loop_delay_seconds Event loop delay of the API process since it started.',
      '# TYPE ptr_event_loop_delay_seconds summary',
      ...[50, 99].map((q) => `ptr_event_loop_delay_seconds{quantile="${q / 100}"} ${loopDelay.percentile(q) / 1e9}`),
      `ptr_event_loop_delay_seconds_max ${loopDelay.max / 1e9}`,
      '# HELP process_resident_memory_bytes Resident memory of the API process.',
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${process.memoryUsage().rss}`,
      '',
    ].join('\n');
  });
  open.use(signedTriggerRouter(deps, runs).routes());
  open.use(codecRouter(deps).routes());

  const api = new Router({ prefix: '/api' });
  api.use(requireSession(deps.db.models, deps.config.SESSION_CACHE_MS));
  api.use(usersRouter(deps).routes());
  api.use(profilesRouter(deps).routes());
  api.use(tasksRouter(deps, { saved: (ref) => runs.taskSaved(ref), deleted: (ref) => runs.forgetTask(ref) }).routes());
  api.use(runsRouter(deps, runs).routes());
  api.use(signedUrlsRouter(deps, runs).routes());
  api.use(servletsRouter(deps).routes());
  api.use(installationsRouter(deps).routes());
  api.use(contentRouter(deps).routes());

  app.use(accessLog(deps.logger));
  app.use(errorHandler(deps.logger));
  app.use(moduleUploadBypass());
  app.use(jsonBody(deps.config.BODY_LIMIT_BYTES));
  app.use(open.routes());
  app.use(api.routes());
  app.use(api.allowedMethods());
  return app;
}
