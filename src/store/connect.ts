import mongoose, { type Connection } from 'mongoose';
import { registerModels, type Models } from './models';

export interface Db {
  conn: Connection;
  models: Models;
  close(): Promise<void>;
}

/**
 * Connects and builds indexes (unique indexes carry the idempotency rules, so they must exist before use).
 * `timeoutMs` (the services' DEPENDENCY_TIMEOUT_MS) bounds every call: choosing a server, connecting, waiting for a
 * pooled connection, and a socket that stops answering (a stalled server), so a stall surfaces as an error within
 * about that long instead of a hang. Command-line tools, whose scans may take longer, pass none.
 */
export async function connectDb(url: string, options: { timeoutMs?: number } = {}): Promise<Db> {
  const { timeoutMs } = options;
  const bounds = timeoutMs
    ? { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs, socketTimeoutMS: timeoutMs, waitQueueTimeoutMS: timeoutMs, bufferTimeoutMS: timeoutMs }
    : { serverSelectionTimeoutMS: 10_000 };
  const conn = mongoose.createConnection(url, { ...bounds, autoIndex: false });
  await conn.asPromise();
  const models = registerModels(conn);
  await Promise.all(Object.values(models).map((model) => model.createIndexes()));
  return { conn, models, close: () => conn.close() };
}

/** FerretDB on SQLite under write contention: "database is locked (SQLITE_BUSY)"; the same write may succeed next. */
export const isBusy = (err: unknown) => /SQLITE_BUSY|database is locked/.test(String((err as { message?: string } | null)?.message ?? ''));

/** Runs a write, trying again (up to 5 times, with a short growing pause) while the database says it is busy. */
export async function retryWhileBusy<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!isBusy(err) || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt + Math.random() * 20));
    }
  }
}

const UNAVAILABLE = /^(Mongo(?:ose)?(Network|NetworkTimeout|ServerSelection|WaitQueueTimeout|PoolCleared|OperationTimeout|TopologyClosed|NotConnected)Error|PoolClearedOnNetworkError|PoolClearedError)$/;

/** MongoDB (or FerretDB) did not answer in time, or cannot be reached: the request may succeed if retried. */
export const isMongoUnavailable = (err: unknown): boolean => {
  for (let e = err as { name?: string; message?: string; cause?: unknown } | null | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (isBusy(e) || UNAVAILABLE.test(e.name ?? '') || /buffering timed out/.test(String(e.message ?? ''))) return true;
  }
  return false;
};

/** true when the error is a duplicate key (E11000) from a unique index. */
export const isDuplicateKey = (err: unknown) => (err as { code?: number } | null)?.code === 11000;
