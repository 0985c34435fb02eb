import type { Middleware } from 'koa';
import { RateLimiterMongo, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimited } from '../errors';
import type { Config } from '../config';
import type { Db } from '../store/connect';
import { sha256 } from '../store/secrets';

/** The collection every API process counts in (rate-limiter-flexible's documents: `key`, `points`, `expire`). */
export const RATE_LIMIT_COLLECTION = 'rate_limits';

const MINUTE_S = 60;

/**
 * Requests per minute, counted in MongoDB so that every API process shares the counts (rate-limiter-flexible's
 * Mongo store: one upsert with `$inc` per request). Exact on MongoDB; FerretDB applies an update as read-modify-write,
 * so two processes counting the same key at the same instant may lose one count (the limit then lets a few more
 * through, never fewer). A limit of 0 is off.
 */
export function createRateLimits(db: Db, config: Pick<Config, 'TRIGGER_LIMIT_PER_MINUTE' | 'WRITE_LIMIT_PER_MINUTE'>) {
  const limiter = (keyPrefix: string, points: number) => {
    if (points <= 0) return undefined;
    let made: RateLimiterMongo | undefined;
    // Made at first use: the connection is open by then. Indexes come with the models (store/models.ts).
    return () => (made ??= new RateLimiterMongo({ storeClient: db.conn.db!, tableName: RATE_LIMIT_COLLECTION, keyPrefix, points, duration: MINUTE_S, disableIndexesCreation: true }));
  };
  const triggers = limiter('trigger', config.TRIGGER_LIMIT_PER_MINUTE);
  const writes = limiter('write', config.WRITE_LIMIT_PER_MINUTE);

  const consume = async (limit: RateLimiterMongo, key: string, refuse: (res: RateLimiterRes) => RateLimited) => {
    try {
      await limit.consume(key);
    } catch (err) {
      if (err instanceof RateLimiterRes) throw refuse(err);
      throw err;
    }
  };
  const retryAfter = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

  return {
    /**
     * Counts one trigger against each key (`url:<id>`, `task:<_id>`); throws RateLimited when one is past
     * TRIGGER_LIMIT_PER_MINUTE, having given back what it took from the others. Returns a function that gives the
     * trigger back (a trigger that found its run already there does not count).
     */
    async trigger(keys: string[]): Promise<() => Promise<void>> {
      const limit = triggers?.();
      if (!limit) return async () => undefined;
      const taken: string[] = [];
      const giveBack = async () => {
        await Promise.all(taken.map((key) => limit.reward(key, 1))).catch(() => undefined);
      };
      for (const key of keys) {
        try {
          await consume(limit, key, (res) => new RateLimited('trigger_limit', `TRIGGER_LIMIT_PER_MINUTE: more than ${config.TRIGGER_LIMIT_PER_MINUTE} triggers a minute through this ${key.startsWith('url:') ? 'signed URL' : 'task'}; nothing was started`, retryAfter(res)));
        } catch (err) {
          await giveBack();
          throw err;
        }
        taken.push(key);
      }
      return giveBack;
    },

    /** Counts writes (POST, PUT, PATCH, DELETE) per session; `exempt` requests (run triggers) count as triggers instead. */
    writes(exempt: (method: string, path: string) => boolean): Middleware {
      return async (ctx, next) => {
        const limit = writes?.();
        if (limit && ctx.method !== 'GET' && ctx.method !== 'HEAD' && ctx.method !== 'OPTIONS' && !exempt(ctx.method, ctx.path)) {
          // The session id's hash, as the sessions collection keys it: the id itself (a credential) is never stored.
          const session = sha256(ctx.cookies.get('sessionId') ?? '');
          await consume(limit, session, (res) => new RateLimited('write_limit', `WRITE_LIMIT_PER_MINUTE: more than ${config.WRITE_LIMIT_PER_MINUTE} writes a minute with this session; nothing was changed`, retryAfter(res)));
        }
        await next();
      };
    },
  };
}

export type RateLimits = ReturnType<typeof createRateLimits>;
