/**
 * A small cache of lookups kept for `ttlMs`, with single flight (concurrent gets of a key share one load). Failed
 * loads are not kept, nor answers `keep` refuses (a run not found yet must be found once its trigger answered).
 * Bounded: past `maxEntries`, the least recently loaded key goes.
 *
 * With `refreshAhead`, a get of an answer past half its `ttlMs` starts one reload in the background and still
 * returns the answer it has: a key in steady use is reloaded before it expires, so its callers never wait for the
 * store. An answer is never returned once it is `ttlMs` old, so the bound on how stale an answer can be is unchanged.
 */
export function createTtlCache<V>(ttlMs: number, options: { maxEntries?: number; refreshAhead?: boolean; keep?: (value: V) => boolean } = {}) {
  const { maxEntries = 10_000, refreshAhead = false, keep = () => true } = options;
  interface Entry {
    value: Promise<V>;
    at: number;
    settled?: boolean;
    reloading?: boolean;
  }
  const entries = new Map<string, Entry>();

  const put = (key: string, entry: Entry) => {
    entries.delete(key); // re-inserted at the end: the map's order is the loading order
    entries.set(key, entry);
    if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
  };
  /** Loads `key`; the entry leaves the map (if it is still there) when the load fails or its answer is not kept. */
  const load = (key: string, loader: () => PromiseLike<V>, now: number): Entry => {
    const entry: Entry = { value: Promise.resolve(loader()), at: now }; // a mongoose Query runs again on every then/catch
    entry.value.then(
      (value) => {
        entry.settled = true;
        if (!keep(value) && entries.get(key) === entry) entries.delete(key);
      },
      () => entries.get(key) === entry && entries.delete(key),
    );
    return entry;
  };

  return {
    get(key: string, loader: () => PromiseLike<V>): Promise<V> {
      if (ttlMs <= 0) return Promise.resolve(loader());
      const now = Date.now();
      const hit = entries.get(key);
      if (hit && now - hit.at < ttlMs) {
        if (refreshAhead && hit.settled && !hit.reloading && now - hit.at >= ttlMs / 2) {
          hit.reloading = true;
          const next = load(key, loader, now);
          next.value.then(
            (value) => {
              if (entries.get(key) !== hit) return;
              if (keep(value)) put(key, next);
              else entries.delete(key);
            },
            () => (hit.reloading = false),
          );
        }
        return hit.value;
      }
      const entry = load(key, loader, now);
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
