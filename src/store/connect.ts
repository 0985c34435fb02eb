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
  // FerretDB (on SQLite) finds documents by `_id` alone and scans the collection for any other filter, so an index
  // that is not unique is never used there and only costs every write of the collection (each index expression is
  // evaluated over the whole document). On FerretDB only unique indexes are built: they carry the idempotency rules.
  // The run list's index and those admission searches by one field are the exception: our build of FerretDB searches
  // them (scripts/install-tools.sh; runs/admission.ts).
  const ferret = 'ferretdbVersion' in (await conn.db!.admin().command({ buildInfo: 1 }));
  await Promise.all(
    Object.values(models).map((model) => (!ferret || model === models.Run || model === models.StartedRun || model === models.WaitingStart ? model.createIndexes() : createUniqueIndexes(model))),
  );
  return { conn, models, close: () => conn.close() };
}

/** The unique indexes of a model's schema (those of its paths' `unique` and of `schema.index(…, { unique })`). */
async function createUniqueIndexes(model: Models[keyof Models]): Promise<void> {
  for (const [fields, options] of model.schema.indexes()) {
    if (options?.unique) await model.collection.createIndex(fields as Record<string, 1 | -1>, options as Record<string, unknown>);
  }
}

/**
 * FerretDB on SQLite under write contention: "database is locked (SQLITE_BUSY)"; the same write may succeed next.
 * FerretDB sends it as a generic server error, so its message is all there is to tell it by.
 */
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

const { MongoNetworkError, MongoServerSelectionError, MongoOperationTimeoutError, MongoTopologyClosedError, MongoNotConnectedError, MongoServerError } = mongoose.mongo;

/**
 * The driver's errors that say the server did not answer or cannot be reached (MongoNetworkError covers its timeouts
 * and cleared pools). Two have no class to test: the driver's wait-queue timeout is not exported (its name is
 * stable), and mongoose's buffering timeout is a plain MongooseError told only by its message.
 */
const isUnansweredDriverError = (e: unknown): boolean =>
  e instanceof MongoNetworkError ||
  e instanceof MongoServerSelectionError ||
  e instanceof MongoOperationTimeoutError ||
  e instanceof MongoTopologyClosedError ||
  e instanceof MongoNotConnectedError ||
  e instanceof mongoose.Error.MongooseServerSelectionError ||
  (e instanceof Error && (e.name === 'MongoWaitQueueTimeoutError' || (e.name === 'MongooseError' && /buffering timed out/.test(e.message))));

/** MongoDB (or FerretDB) did not answer in time, or cannot be reached: the request may succeed if retried. */
export const isMongoUnavailable = (err: unknown): boolean => {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (isBusy(e) || isUnansweredDriverError(e)) return true;
  }
  return false;
};

/** true when the error is a duplicate key (E11000) from a unique index (a bulk write's error carries the code too). */
export const isDuplicateKey = (err: unknown) => (err instanceof MongoServerError || err instanceof mongoose.mongo.MongoBulkWriteError) && err.code === 11000;
