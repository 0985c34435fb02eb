import { expect } from 'chai';
import { createTtlCache } from '../../src/ttl-cache';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the lookup cache (sessions, trigger lookups)', () => {
  it('shares one load between concurrent gets, and keeps the answer for its time to live', async () => {
    const cache = createTtlCache<number>(200);
    let loads = 0;
    const load = async () => {
      loads++;
      await sleep(20);
      return loads;
    };
    expect(await Promise.all([cache.get('k', load), cache.get('k', load), cache.get('k', load)])).to.deep.equal([1, 1, 1]);
    expect(await cache.get('k', load)).to.equal(1);
    await sleep(220);
    expect(await cache.get('k', load), 'expired: the next get waits for a new load').to.equal(2);
    expect(loads).to.equal(2);
  });

  it('does not keep a failed load', async () => {
    const cache = createTtlCache<string>(1_000);
    let fail = true;
    const load = async () => {
      if (fail) throw new Error('store down');
      return 'ok';
    };
    await cache.get('k', load).then(
      () => expect.fail('should have failed'),
      (err: Error) => expect(err.message).to.equal('store down'),
    );
    await sleep(1);
    fail = false;
    expect(await cache.get('k', load)).to.equal('ok');
  });

  it('answers the gets waiting on a load forgotten meanwhile from a load of their own, and keeps nothing of the dropped one', async () => {
    // A run's close forgets its record while a read of it waits on the record's load: that read must still answer.
    const cache = createTtlCache<string>(1_000);
    let loads = 0;
    const load = async () => {
      loads++;
      const n = loads;
      await sleep(30);
      return `load ${n}`;
    };
    const waiting = Promise.all([cache.get('k', load), cache.get('k', load)]);
    await sleep(5);
    cache.forget('k');
    const answers = await waiting;
    for (const answer of answers) expect(answer).to.match(/^load [23]$/);
    expect(loads, 'the dropped load and one of its own per waiting get').to.equal(3);
    expect(await cache.get('k', load), 'what the forgotten load found was not kept').to.not.equal('load 1');
  });

  it('with refresh ahead, reloads a key in use in the background and never serves an answer past its time to live', async () => {
    const cache = createTtlCache<number>(200, { refreshAhead: true });
    let loads = 0;
    let release: (() => void) | undefined;
    const load = async () => {
      const n = ++loads;
      if (n === 2) await new Promise<void>((r) => (release = r)); // the background reload takes its time
      return n;
    };
    expect(await cache.get('k', load)).to.equal(1);
    await sleep(120); // past half the time to live
    expect(await cache.get('k', load), 'answers at once with what it has').to.equal(1);
    expect(await cache.get('k', load), 'one reload at a time').to.equal(1);
    expect(loads).to.equal(2);
    release!();
    await sleep(1);
    expect(await cache.get('k', load), 'the reload landed').to.equal(2);

    // Without traffic past the time to live, the next get waits for the store: the staleness bound holds.
    await sleep(220);
    expect(await cache.get('k', load)).to.equal(3);
  });

  it('does not keep an answer `keep` refuses (a run not found yet), but shares its load', async () => {
    const cache = createTtlCache<string | null>(10_000, { keep: (v) => v !== null });
    let stored: string | null = null;
    let loads = 0;
    const load = async () => {
      loads++;
      return stored;
    };
    expect(await Promise.all([cache.get('k', load), cache.get('k', load)])).to.deep.equal([null, null]);
    expect(loads).to.equal(1);
    stored = 'found';
    expect(await cache.get('k', load), 'the miss was not kept').to.equal('found');
    stored = 'changed';
    expect(await cache.get('k', load), 'a hit is kept').to.equal('found');
  });

  it('past its size, drops the key used longest ago', async () => {
    const cache = createTtlCache<string>(100, { maxEntries: 2 });
    const loads: string[] = [];
    const load = (key: string) => async () => {
      loads.push(key);
      return key;
    };
    await cache.get('a', load('a'));
    await cache.get('b', load('b'));
    await sleep(120);
    await cache.get('a', load('a')); // expired: loaded again, so now the newest
    await cache.get('c', load('c')); // over the bound: 'b' goes, not 'a'
    await cache.get('a', load('a'));
    await cache.get('b', load('b')); // 'c' goes: 'a' was used since
    await cache.get('a', load('a'));
    expect(loads).to.deep.equal(['a', 'b', 'a', 'c', 'b']);
  });

  it('past its size in bytes, drops the key used longest ago, and keeps no answer larger than itself', async () => {
    const cache = createTtlCache<string>(10_000, { maxBytes: 250 });
    const loads: string[] = [];
    const load = (key: string, size: number) => async () => {
      loads.push(key);
      return key.repeat(size);
    };
    await cache.get('a', load('a', 100));
    await cache.get('b', load('b', 100));
    await cache.get('a', load('a', 100)); // a used: b is now the oldest
    await cache.get('c', load('c', 100)); // 300 bytes over 250: b goes
    await cache.get('a', load('a', 100));
    await cache.get('b', load('b', 100));
    const huge = await cache.get('h', load('h', 1000));
    expect(huge).to.have.length(1000);
    await cache.get('h', load('h', 1000));
    expect(loads).to.deep.equal(['a', 'b', 'c', 'b', 'h', 'h']);
  });

  it('forgets a key at once', async () => {
    const cache = createTtlCache<number>(10_000);
    let loads = 0;
    const load = async () => ++loads;
    await cache.get('a/1', load);
    cache.forget('a/1');
    expect(await cache.get('a/1', load)).to.equal(2);
    cache.forgetPrefix('a/');
    expect(await cache.get('a/1', load)).to.equal(3);
  });
});
