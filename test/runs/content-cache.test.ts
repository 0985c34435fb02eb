import { expect } from 'chai';
import { createRunContentCache } from '../../activities/run-content-cache';
import { StoredContentMissing } from '../../src/store/run-content';
import { getStack } from '../helpers/stack';

describe('runs: the worker\'s copies of run conversations (activities/run-content-cache.ts)', () => {
  // Runs that are in no record: a conversation the cache does not hold is read from the store, which lacks it.
  const run = (i: number) => ({ id: `run/cache-test/default/t/r${i}`, createdAt: 1_000 + i });
  const prompt = [{ role: 'user' as const, text: 'Say x' }];
  const holds = (cache: ReturnType<typeof createRunContentCache>, i: number) =>
    cache.conversation(run(i), 1).then(
      (turns) => turns.length === 1,
      (err: unknown) => {
        if (!(err instanceof StoredContentMissing)) throw err;
        return false;
      },
    );

  it('counts what a copy holds beyond its texts, so one-line conversations stay within the bound in bytes', async () => {
    // 100,000 bytes for conversations (half the cache): a thousand five-character prompts would fit if only their
    // texts counted; each copy's objects and key take some hundreds of bytes more.
    const cache = createRunContentCache(getStack().db.models, 200_000);
    for (let i = 0; i < 1_000; i++) await cache.saved(run(i), 0, prompt);
    expect(await cache.conversation(run(999), 1), 'the newest is held').to.deep.equal([{ role: 'user', text: 'Say x' }]);
    let held = 0;
    for (let i = 0; i < 1_000; i++) if (await holds(cache, i)) held++;
    expect(held, 'conversations still held').to.be.greaterThan(0).and.at.most(200);
  });

  it('drops a run\'s conversation when told the run has ended (forget), so the next read goes to the store', async () => {
    const cache = createRunContentCache(getStack().db.models, 200_000);
    await cache.saved(run(1), 0, prompt);
    expect(await holds(cache, 1)).to.equal(true);
    cache.forget(run(1));
    expect(await holds(cache, 1), 'read again from the store, which has none').to.equal(false);
  });
});
