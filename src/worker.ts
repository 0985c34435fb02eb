import { loadConfigOrExit } from './config';
import { createLogger } from './logger';
import { connectDb } from './store/connect';
import { keyringFromConfig } from './store/secrets';
import { createWorker, type RunningWorkerParts } from './temporal/worker';
import { startWorkerHttp } from './worker-http';
import { startTracing } from './telemetry/tracing';

if (require.main === module) {
  void main();
}

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT, name: 'worker' });
  // Before anything makes a span or a Temporal client: off (undefined) unless an OTLP endpoint is set.
  const tracing = startTracing(config, 'worker');
  try {
    const db = await connectDb(config.MONGO_URL, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS });
    // Listening before the workers exist (bundling takes seconds): a taken port fails at once, and probes get 503s.
    const started: { worker?: RunningWorkerParts } = {};
    const httpServer = config.WORKER_HTTP_PORT === undefined ? undefined : await startWorkerHttp({ config, logger, db, worker: () => started.worker }, config.WORKER_HTTP_PORT);
    if (httpServer) logger.info({ host: config.HOST, port: httpServer.port }, 'worker HTTP listening');
    const worker = await createWorker({ config, logger, db, keyring: keyringFromConfig(config), tracing });
    started.worker = worker;
    logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker polling');
    // The SDK shuts the worker down on these signals itself; this covers a runtime installed without its handlers.
    const stop = () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await worker.run();
    await httpServer?.close();
    await worker.close();
    await db.close();
    // The spans still batched (the workflows' last among them) go out before the process ends.
    await tracing?.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'could not send the last spans'));
  } catch (err) {
    console.error(`worker failed: ${(err as Error).message}`);
    await tracing?.shutdown().catch(() => undefined);
    process.exit(1);
  }
}
