import { startStack, stopStack } from './helpers/stack';

/** Root hooks: one real stack for the whole run (starting servers per test would cost minutes). */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(180_000);
    await startStack();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopStack();
  },
};
