import { expect } from 'chai';
import { createKeyedLimiter } from '../../src/runs/keyed-limiter';

describe('keyed limiter', () => {
  it('runs at most the limit of one key at once, in the order they came, while another key runs at once', async () => {
    const run = createKeyedLimiter(2);
    const releases: Array<() => void> = [];
    const started: string[] = [];
    let most = 0;
    let running = 0;
    const task = (name: string) => async () => {
      started.push(name);
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => releases.push(r));
      running--;
      return name;
    };
    const a = ['a1', 'a2', 'a3', 'a4'].map((n) => run('a', task(n)));
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal(['a1', 'a2']);
    const b = run('b', task('b1'));
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal(['a1', 'a2', 'b1']);
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(started).to.deep.equal(['a1', 'a2', 'b1', 'a3']);
    while (releases.length) {
      releases.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all([...a, b])).to.deep.equal(['a1', 'a2', 'a3', 'a4', 'b1']);
    expect(most).to.equal(3);
  });

  it('frees its place when a task throws', async () => {
    const run = createKeyedLimiter(1);
    await run('k', async () => Promise.reject(new Error('no'))).catch(() => undefined);
    expect(await run('k', async () => 'next')).to.equal('next');
  });
});
