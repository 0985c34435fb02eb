import mongoose, { type Connection } from 'mongoose';
import { registerModels, type Models } from './models';

export interface Db {
  conn: Connection;
  models: Models;
  close(): Promise<void>;
}

/** Connects and builds indexes (unique indexes carry the idempotency rules, so they must exist before use). */
export async function connectDb(url: string): Promise<Db> {
  const conn = mongoose.createConnection(url, { serverSelectionTimeoutMS: 10_000, autoIndex: false });
  await conn.asPromise();
  const models = registerModels(conn);
  await Promise.all(Object.values(models).map((model) => model.createIndexes()));
  return { conn, models, close: () => conn.close() };
}

/** true when the error is a duplicate key (E11000) from a unique index. */
export const isDuplicateKey = (err: unknown) => (err as { code?: number } | null)?.code === 11000;
