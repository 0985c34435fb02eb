import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config';
import type { Logger } from './logger';
import { createRegistry, exposition } from './metrics';
import { NotReady, checkReadiness, dependencyChecks } from './readiness';
import type { Db } from './store/connect';
import type { RunningWorkerParts } from './temporal/worker';

export interface WorkerHttpDeps {
  config: Pick<Config, 'HOST' | 'DEPENDENCY_TIMEOUT_MS'>;
  logger: Logger;
  db: Db;
  /** The process's workers, once created (they take seconds to bundle workflows; until then, not ready). */
  worker: () => RunningWorkerParts | undefined;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/**
 * A worker's operator endpoints on `port` (WORKER_HTTP_PORT), bound to HOST: `/healthz` (200 while the workers run,
 * 503 otherwise), `/readyz` (the API's checks, plus the workers running) and `/metrics`. Resolves once it listens;
 * rejects if it cannot (the port is taken).
 */
export async function startWorkerHttp(deps: WorkerHttpDeps, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const timeoutMs = deps.config.DEPENDENCY_TIMEOUT_MS;
  // Until the workers exist, /metrics still serves the process metrics.
  const starting = createRegistry();

  const routes: Record<string, () => Promise<Answer>> = {
    '/healthz': async () => {
      const state = stateOf(deps.worker());
      return state === 'RUNNING' ? { status: 200, body: { ok: true } } : { status: 503, body: { ok: false, worker: state } };
    },
    '/readyz': async () => {
      const worker = deps.worker();
      const checks = {
        ...(worker ? dependencyChecks({ db: deps.db, temporal: worker.temporal }, timeoutMs) : {}),
        worker: async () => {
          const state = stateOf(worker);
          if (state !== 'RUNNING') throw new NotReady(`not running (${state})`);
        },
      };
      const { ready, body } = await checkReadiness(checks, timeoutMs, deps.logger);
      return ready ? { status: 200, body } : { status: 503, body, headers: { 'Retry-After': '1' } };
    },
    '/metrics': async () => {
      const { contentType, text } = await exposition(deps.worker()?.metrics ?? starting);
      return { status: 200, body: text, headers: { 'Content-Type': contentType } };
    },
  };

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://worker').pathname;
    const route = routes[path];
    const answer: Promise<Answer> = !route
      ? Promise.resolve(error(404, 'not_found', `no route for ${req.method} ${path}`))
      : req.method !== 'GET' && req.method !== 'HEAD'
        ? Promise.resolve({ ...error(405, 'method_not_allowed', `${path} answers GET`), headers: { Allow: 'GET, HEAD' } })
        : route().catch((err: unknown) => {
            deps.logger.error({ err, path }, 'request failed');
            return error(500, 'internal', 'internal error');
          });
    void answer.then(({ status, body, headers }) => {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, deps.config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        // A scraper's kept-alive connection would hold close() open until it times out.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The workers' state as the SDK names it (RUNNING, STOPPING, ...), or `STARTING` before they exist. */
const stateOf = (worker: RunningWorkerParts | undefined): string => worker?.getState() ?? 'STARTING';

const error = (status: number, code: string, message: string): Answer => ({ status, body: { error: { code, message } } });
