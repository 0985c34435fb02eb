/**
 * A small cache of lookups kept for `ttlMs`, with single flight (concurrent gets of a key share one load). Failed
 * loads are not kept. Bounded: past `maxEntries`, the oldest entry goes.
 */
export function createTtlCache<V>(ttlMs: number, maxEntries = 10_000) {
  const entries = new Map<string, { value: Promise<V>; at: number }>();
  return {
    get(key: string, load: () => PromiseLike<V>): Promise<V> {
      if (ttlMs <= 0) return Promise.resolve(load());
      const now = Date.now();
      const hit = entries.get(key);
      if (hit && now - hit.at < ttlMs) return hit.value;
      const entry = { value: Promise.resolve(load()), at: now }; // a mongoose Query runs again on every then/catch
      entries.set(key, entry);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
      entry.value.catch(() => {
        if (entries.get(key) === entry) entries.delete(key);
      });
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
