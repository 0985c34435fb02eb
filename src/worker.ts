import { loadConfigOrExit } from './config';
import { createLogger } from './logger';
import { connectDb } from './store/connect';
import { keyringFromConfig } from './store/secrets';
import { createWorker } from './temporal/worker';

if (require.main === module) {
  void main();
}

async function main() {
  const config = loadConfigOrExit();
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'worker' });
  try {
    const db = await connectDb(config.MONGO_URL);
    const { worker, close } = await createWorker({ config, logger, db, keyring: keyringFromConfig(config) });
    logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker polling');
    process.once('SIGINT', () => worker.shutdown());
    process.once('SIGTERM', () => worker.shutdown());
    await worker.run();
    await close();
    await db.close();
  } catch (err) {
    console.error(`worker failed: ${(err as Error).message}`);
    process.exit(1);
  }
}
