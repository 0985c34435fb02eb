/**
 * `npm run rotate-key [-- --dry-run]`: re-encrypts every stored secret under MASTER_KEY, reading old ciphertexts
 * with MASTER_KEYS_RETIRED. Procedure: docs/key-rotation.md. Exit code 1 when something could not be read.
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../config';
import { connectDb } from '../store/connect';
import { rotateSecrets } from '../store/key-rotation';
import { keyringFromConfig } from '../store/secrets';
import { loadHelperSettings } from './dev-stack-file';
import { runCommand } from './run-command';

const USAGE = `Usage: npm run rotate-key [-- --dry-run]

Re-encrypts task keys (tasks, task_versions) and servlet install configuration (installations) under MASTER_KEY.
Old ciphertexts are read with the keys in MASTER_KEYS_RETIRED. --dry-run only counts.
Environment: MONGO_URL, MASTER_KEY, MASTER_KEYS_RETIRED. See docs/key-rotation.md. While npm run dev runs, MONGO_URL
and MASTER_KEY default to its own (found through <DEV_DATA_DIR>/dev-stack.json).`;

async function main(): Promise<number> {
  let dryRun: boolean;
  try {
    const { values } = parseArgs({ options: { 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    dryRun = Boolean(values['dry-run']);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  let config;
  try {
    config = loadHelperSettings('rotate-key', ['MONGO_URL', 'MASTER_KEY', 'MASTER_KEYS_RETIRED']);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const keyring = keyringFromConfig(config);
  const db = await connectDb(config.MONGO_URL);
  try {
    const counts = await rotateSecrets(db.models, keyring, { dryRun });
    console.log(`${dryRun ? 'Would re-encrypt' : 'Re-encrypted'} under master key "${keyring.current.id}":`);
    for (const c of counts) {
      console.log(
        `  ${c.collection}: ${c.rotated} ${dryRun ? 'to re-encrypt' : 're-encrypted'}, ${c.alreadyCurrent} already current, ` +
          `${c.changedMeanwhile} changed meanwhile, ${c.unreadable} unreadable`,
      );
    }
    const unreadable = counts.reduce((n, c) => n + c.unreadable, 0);
    if (unreadable > 0) {
      console.error(`${unreadable} secret(s) are sealed under a key that is neither MASTER_KEY nor in MASTER_KEYS_RETIRED; add that key and run again.`);
      return 1;
    }
    return 0;
  } finally {
    await db.close();
  }
}

if (require.main === module) runCommand('rotate-key failed', () => main());
