import type { RunRecord } from '../../../store/runs';

interface Entry {
  value: Promise<RunRecord | null>;
  at: number;
  settled?: boolean;
  reloading?: boolean;
  /** The rendered body and ETag of a closed run (closed runs never change). */
  closed?: { body: string; etag: string };
}

/**
 * Run records as the read path sees them, kept for `ttlMs` (single flight while a read is in flight). Polls of a
 * run then cost no database read per request; a run deleted with its task may still be served for up to `ttlMs`
 * by an API process that cached it (the same bound as the session cache). Misses are not cached, so a run is
 * readable as soon as its trigger answered. A record read past half its `ttlMs` is read again in the background
 * (refresh ahead), so a polled run never waits for the database.
 */
export function createRecordCache(ttlMs: number, maxEntries = 10_000) {
  const entries = new Map<string, Entry>();

  return {
    async get(id: string, load: () => PromiseLike<RunRecord | null>): Promise<{ record: RunRecord | null; entry?: Entry }> {
      const now = Date.now();
      const start = () => {
        const fresh: Entry = { value: Promise.resolve(load()), at: now }; // a mongoose Query runs again on every then/catch
        fresh.value.then(() => (fresh.settled = true), () => undefined);
        return fresh;
      };
      const put = (fresh: Entry) => {
        entries.set(id, fresh);
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
      };
      let entry = entries.get(id);
      if (!entry || now - entry.at >= ttlMs) {
        entry = start();
        put(entry);
      } else if (entry.settled && !entry.reloading && now - entry.at >= ttlMs / 2) {
        const current = entry;
        current.reloading = true;
        const next = start();
        next.value.then(
          (record) => entries.get(id) === current && (record ? put(next) : entries.delete(id)),
          () => (current.reloading = false),
        );
      }
      const record = await entry.value.catch((err: unknown) => {
        entries.delete(id);
        throw err;
      });
      if (!record) {
        if (entries.get(id) === entry) entries.delete(id);
        return { record: null };
      }
      return { record, entry };
    },
    /** Forget a record (its run just closed: the next read should see the closed record). */
    forget(id: string) {
      entries.delete(id);
    },
    /** Forget every record whose id starts with `prefix` (all runs of a deleted task). */
    forgetPrefix(prefix: string) {
      for (const id of entries.keys()) if (id.startsWith(prefix)) entries.delete(id);
    },
  };
}

export type RecordCache = ReturnType<typeof createRecordCache>;
