import path from 'node:path';
import { closeBrowser } from './helpers/browser';
import { stopEverythingServer } from './helpers/mcp-everything';
import { stopHostileServer } from './helpers/mcp-hostile-server';
import { startStack, stopStack } from './helpers/stack';

/** Tests that need neither Temporal nor MongoDB: pure units, and the MCP client against its own test servers. */
const STACKLESS = ['unit', 'mcp'].map((dir) => path.join(__dirname, dir) + path.sep);

/** Whether any test file of this run needs the stack (everything outside test/unit/ and test/mcp/ does). */
function needsStack(root: Mocha.Suite | undefined): boolean {
  const files = (root?.suites ?? []).map((s) => s.file).filter((f): f is string => !!f);
  return files.length === 0 || files.some((f) => !STACKLESS.some((dir) => path.resolve(f).startsWith(dir)));
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
    // The MCP test servers and the browser start on first use (test/helpers/mcp-*.ts, browser.ts); stopping one never
    // started does nothing.
    await Promise.all([stopEverythingServer(), stopHostileServer(), closeBrowser()]);
    await stopStack();
  },
};
