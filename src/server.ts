import type { Server } from 'node:http';
import { loadConfigOrExit, type Config } from './config';
import { createLogger } from './logger';
import { connectDb } from './store/connect';
import { keyringFromConfig } from './store/secrets';
import { connectTemporal } from './temporal/client';
import { createApp } from './http/app';
import { answerClientErrors } from './http/client-errors';

/** Starts the API. Resolves once it listens; `close` stops it and its connections. */
export async function startServer(config: Config) {
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'api' });
  const db = await connectDb(config.MONGO_URL, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS });
  const temporal = await connectTemporal(config);
  const app = createApp({ config, logger, db, keyring: keyringFromConfig(config), temporal });
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s));
    answerClientErrors(s);
    s.once('error', reject);
  });
  logger.info({ url: config.PUBLIC_URL }, 'API listening');
  return {
    server,
    async close() {
      await new Promise((r) => server.close(r));
      await temporal.connection.close();
      await db.close();
    },
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
