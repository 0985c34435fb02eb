import type { Server } from 'node:http';
import { loadConfigOrExit, type Config } from './config';
import { createLogger } from './logger';
import { connectDb } from './store/connect';
import { keyringFromConfig } from './store/secrets';
import { connectTemporal } from './temporal/client';
import { createApp } from './http/app';
import { createApiServer } from './http/connection-limits';
import { APP_CLOSING } from './http/routes/runs/events';
import { startTracing } from './telemetry/tracing';

/** Once the API stops, answers in flight have this long to finish; then their connections are cut. */
const CLOSE_GRACE_MS = 5_000;
/** How often connections whose answer finished are closed while the API stops. */
const IDLE_SWEEP_MS = 100;

/**
 * Starts the API. Resolves once it listens; `close` stops it: no new connections, open event streams ended (their
 * clients reconnect elsewhere and resume), each connection closed once its answer finished, any still answering
 * after CLOSE_GRACE_MS cut; then the Temporal and database connections close.
 */
export async function startServer(config: Config) {
  const logger = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT, name: 'api' });
  // Before anything makes a span or a Temporal client: off (undefined) unless an OTLP endpoint is set.
  const tracing = startTracing(config, 'api');
  const db = await connectDb(config.MONGO_URL, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS });
  const temporal = await connectTemporal(config, { traced: !!tracing });
  const app = createApp({ config, logger, db, keyring: keyringFromConfig(config), temporal, traced: !!tracing });
  const server: Server = createApiServer(app.callback(), { requestTimeoutMs: config.REQUEST_TIMEOUT_MS, perAddress: config.CONNECTIONS_PER_ADDRESS });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  logger.info({ url: config.PUBLIC_URL }, 'API listening');
  let closing: Promise<void> | undefined;
  const close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    app.emit(APP_CLOSING);
    // `server.close` closes the connections idle when it is called; the others as their answers finish.
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
    try {
      await closed;
    } finally {
      clearInterval(sweep);
      clearTimeout(cut);
    }
    await temporal.connection.close();
    await db.close();
    await tracing?.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'could not send the last spans'));
  };
  return {
    server,
    close: () => (closing ??= close()),
  };
}

if (require.main === module) {
  void main();
}

async function main() {
  const config = loadConfigOrExit();
  try {
    const running = await startServer(config);
    const stop = () => void running.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    console.error(e.code === 'EADDRINUSE' ? `API: port ${config.PORT} is already in use (set PORT)` : `API failed to start: ${e.message}`);
    process.exit(1);
  }
}
