import { LRUCache } from 'lru-cache';

/**
 * Lookups kept for `ttlMs` (lru-cache): concurrent gets of a key share one load (its `fetch`), failed loads are not
 * kept, nor answers `keep` refuses (a run not found yet must be found once its trigger answered). Bounded in entries
 * and in bytes (each answer's JSON size, an estimate of what it holds): past either, the key used longest ago goes.
 *
 * With `refreshAhead`, a get of an answer past half its `ttlMs` starts one reload in the background and still
 * returns the answer it has: a key in steady use is reloaded before it expires, so its callers never wait for the
 * store. An answer is never returned once it is `ttlMs` old, so the bound on how stale an answer can be is unchanged.
 */
/** What one cache may hold unless told otherwise: large enough for every hot key, small beside a process's heap. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

export function createTtlCache<V>(
  ttlMs: number,
  options: { maxEntries?: number; maxBytes?: number; refreshAhead?: boolean; keep?: (value: V) => boolean } = {},
) {
  const { maxEntries = 10_000, maxBytes = DEFAULT_MAX_BYTES, refreshAhead = false, keep = () => true } = options;
  interface Answer {
    value: V;
    at: number;
  }
  const cache = new LRUCache<string, Answer, () => PromiseLike<V>>({
    max: maxEntries,
    maxSize: maxBytes,
    // Measured once per load (a few per second per key in use): an answer larger than the whole cache is not kept.
    sizeCalculation: (answer) => Math.max(1, JSON.stringify(answer.value)?.length ?? 1),
    ttl: Math.max(1, ttlMs),
    fetchMethod: async (_key, _stale, { context }) => ({ value: await context(), at: Date.now() }),
  });
  const reloading = new Set<string>();

  const reload = (key: string, current: Answer, loader: () => PromiseLike<V>) => {
    reloading.add(key);
    Promise.resolve(loader())
      .then(
        (value) => {
          if (cache.get(key) !== current) return; // forgotten, or replaced, meanwhile
          if (keep(value)) cache.set(key, { value, at: Date.now() });
          else cache.delete(key);
        },
        () => undefined, // the answer held stays until its time is up; the next get tries again
      )
      .finally(() => reloading.delete(key));
  };

  return {
    async get(key: string, loader: () => PromiseLike<V>): Promise<V> {
      if (ttlMs <= 0) return loader();
      const hit = cache.get(key);
      if (hit) {
        if (refreshAhead && !reloading.has(key) && Date.now() - hit.at >= ttlMs / 2) reload(key, hit, loader);
        return hit.value;
      }
      // A load the cache drops while it runs (the key forgotten, as a run's close does, or evicted) rejects every
      // caller sharing it with lru-cache's "deleted": theirs is not the failure of a load, so they load again.
      let failed = false;
      const load = () =>
        Promise.resolve(loader()).catch((err: unknown) => {
          failed = true;
          throw err;
        });
      let answer: Answer | undefined;
      try {
        answer = await cache.fetch(key, { context: load });
      } catch (err) {
        if (failed) throw err;
      }
      if (answer === undefined) return loader();
      if (!keep(answer.value) && cache.get(key) === answer) cache.delete(key);
      return answer.value;
    },
    forget(key: string) {
      cache.delete(key);
    },
    forgetPrefix(prefix: string) {
      for (const key of [...cache.keys()]) if (key.startsWith(prefix)) cache.delete(key);
    },
  };
}
