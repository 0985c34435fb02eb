import path from 'node:path';
import { startStack, stopStack } from './helpers/stack';

const UNIT = path.join(__dirname, 'unit') + path.sep;

/** Whether any test file of this run needs the stack (everything outside test/unit/ does). */
function needsStack(root: Mocha.Suite | undefined): boolean {
  const files = (root?.suites ?? []).map((s) => s.file).filter((f): f is string => !!f);
  return files.length === 0 || files.some((f) => !path.resolve(f).startsWith(UNIT));
}

/**
 * Root hooks: one real stack for the whole run (starting servers per test would cost minutes). A run of pure unit
 * tests alone (test/unit/, `npm run test:unit`) starts nothing.
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    if (!needsStack(this.test?.parent)) return;
    this.timeout(180_000);
    await startStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
  },
};
