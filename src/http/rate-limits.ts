import type { Middleware } from 'koa';
import { RateLimiterMongo, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimited } from '../errors';
import type { Config } from '../config';
import type { Db } from '../store/connect';
import { RATE_LIMIT_COLLECTION } from '../store/rate-limit-counts';
import { sha256 } from '../store/secrets';
import { presentedSession } from './middleware/auth';


const MINUTE_S = 60;

/**
 * Requests per minute, counted in MongoDB so that every API process shares the counts (rate-limiter-flexible's
 * Mongo store: one upsert with `$inc` per request). Exact on MongoDB. FerretDB applies an update as read-modify-write
 * and looks the key up by a scan, so concurrent requests of one key lose counts: a burst can pass the limit by a
 * large share (measured: 29 of 40 simultaneous triggers through a limit of 10); requests spread over the minute are
 * counted. The reconciler deletes expired counts (`deleteExpiredCounts`). A limit of 0 is off.
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
     * Counts one trigger of the task (signed URLs and Variant A alike: a signed URL's triggers are its task's, so the
     * task's count bounds each URL too); throws RateLimited past TRIGGER_LIMIT_PER_MINUTE. Returns a function that
     * gives the trigger back (a trigger that found its run already there does not count).
     */
    async trigger(taskId: string): Promise<() => Promise<void>> {
      const limit = triggers?.();
      if (!limit) return async () => undefined;
      const key = `task:${taskId}`;
      await consume(limit, key, (res) => new RateLimited('trigger_limit', `TRIGGER_LIMIT_PER_MINUTE: more than ${config.TRIGGER_LIMIT_PER_MINUTE} triggers a minute of this task; nothing was started`, retryAfter(res)));
      return async () => {
        await limit.reward(key, 1).catch(() => undefined);
      };
    },

    /**
     * Counts writes (POST, PUT, PATCH, DELETE) per session. A request whose matched route is among `triggerRoutes`
     * (as registered, e.g. Variant A's `PUT .../runs/:run`) counts as a trigger instead.
     */
    writes(triggerRoutes: ReadonlySet<string>): Middleware {
      return async (ctx, next) => {
        const limit = writes?.();
        // The routes the router matched for this request (set before any of its middleware runs).
        const matched = (ctx as { matched?: Array<{ path: string; methods: string[] }> }).matched ?? [];
        const trigger = matched.some((layer) => layer.methods.includes(ctx.method) && triggerRoutes.has(`${ctx.method} ${layer.path}`));
        if (limit && ctx.method !== 'GET' && ctx.method !== 'HEAD' && ctx.method !== 'OPTIONS' && !trigger) {
          // The credential's hash (session id or access token, cookie or Bearer), as their collections key them: the
          // credential itself is never stored.
          const session = sha256(presentedSession(ctx) ?? '');
          await consume(limit, session, (res) => new RateLimited('write_limit', `WRITE_LIMIT_PER_MINUTE: more than ${config.WRITE_LIMIT_PER_MINUTE} writes a minute with this session; nothing was changed`, retryAfter(res)));
        }
        await next();
      };
    },
  };
}

export type RateLimits = ReturnType<typeof createRateLimits>;

