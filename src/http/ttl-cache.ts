/**
 * A small cache of lookups kept for `ttlMs`, with single flight (concurrent gets of a key share one load). Failed
 * loads are not kept. Bounded: past `maxEntries`, the oldest entry goes.
 *
 * With `refreshAhead`, a get of an answer past half its `ttlMs` starts one reload in the background and still
 * returns the answer it has: a key in steady use is reloaded before it expires, so its callers never wait for the
 * store. An answer is never returned once it is `ttlMs` old, so the bound on how stale an answer can be is unchanged.
 */
export function createTtlCache<V>(ttlMs: number, options: { maxEntries?: number; refreshAhead?: boolean } = {}) {
  const { maxEntries = 10_000, refreshAhead = false } = options;
  interface Entry {
    value: Promise<V>;
    at: number;
    settled?: boolean;
    reloading?: boolean;
  }
  const entries = new Map<string, Entry>();

  const start = (key: string, load: () => PromiseLike<V>, now: number): Entry => {
    const entry: Entry = { value: Promise.resolve(load()), at: now }; // a mongoose Query runs again on every then/catch
    entry.value.then(
      () => (entry.settled = true),
      () => entries.get(key) === entry && entries.delete(key),
    );
    return entry;
  };
  const put = (key: string, entry: Entry) => {
    entries.set(key, entry);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
  };

  return {
    get(key: string, load: () => PromiseLike<V>): Promise<V> {
      if (ttlMs <= 0) return Promise.resolve(load());
      const now = Date.now();
      const hit = entries.get(key);
      if (hit && now - hit.at < ttlMs) {
        if (refreshAhead && hit.settled && !hit.reloading && now - hit.at >= ttlMs / 2) {
          hit.reloading = true;
          const next = start(key, load, now);
          next.value.then(
            () => entries.get(key) === hit && put(key, next),
            () => (hit.reloading = false),
          );
        }
        return hit.value;
      }
      const entry = start(key, load, now);
      put(key, entry);
      return entry.value;
    },
    forget(key: string) {
      entries.delete(key);
    },
    forgetPrefix(prefix: string) {
      for (const key of entries.keys()) if (key.startsWith(prefix)) entries.delete(key);
    },
  };
}
