import type { Models } from './models';

/** The collection every API process counts requests in (http/rate-limits.ts; rate-limiter-flexible's documents). */
export const RATE_LIMIT_COLLECTION = 'rate_limits';

/** Deletes the counts whose minute has passed (each key's document would otherwise stay for ever). Returns how many. */
export async function deleteExpiredCounts(models: Models): Promise<number> {
  const { deletedCount } = await models.RateLimit.collection.deleteMany({ expire: { $lt: new Date() } });
  return deletedCount;
}
