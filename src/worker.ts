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
    const worker = await createWorker({ config, logger, db, keyring: keyringFromConfig(config) });
    logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker polling');
    // The SDK shuts the worker down on these signals itself; this covers a runtime installed without its handlers.
    const stop = () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await worker.run();
    await worker.close();
    await db.close();
  } catch (err) {
    console.error(`worker failed: ${(err as Error).message}`);
    process.exit(1);
  }
}
