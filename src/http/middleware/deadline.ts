import type { Context, Middleware } from 'koa';
import type { Db } from '../../store/connect';
import { dependencyUnavailable, type Dependency } from '../../errors';
import type { Logger } from '../../logger';
import { RequestCalls, watchRequestCalls, withRequestCalls } from '../request-calls';

/** The store's connection (its commands are watched here). */
type Connection = Db['conn'];

/** A call in flight at least this long at the deadline is being waited on; a younger one may be one of many quick calls. */
const WAITING_MS = 500;
/** How soon a request past its deadline and waiting on nothing (computing) is looked at again. */
const LOOK_AGAIN_MS = 100;

/** What a request's 503 at its deadline says beyond the dependency (the fields and hint the handler's own 503 has). */
export interface UnavailableAnswer {
  extra?: Record<string, unknown>;
  hint?: string;
}

/** Sets what this request's 503 at its deadline says (e.g. a trigger names the run it may have recorded). */
export function whenUnavailable(ctx: Context, answer: UnavailableAnswer): void {
  ctx.state.unavailableAnswer = answer;
}

/**
 * One deadline per request (REQUEST_DEADLINE_MS) from the time its body is read, whatever number of dependency calls
 * it makes one after another: each of them is bounded by DEPENDENCY_TIMEOUT_MS (a read the driver retries, twice
 * that), so without it a request making a few of them during a stall answers after several times that bound. A request
 * still waiting on MongoDB or Temporal at its deadline (request-calls.ts) is answered there and then, 503 naming the
 * dependency (with what the handler set by `whenUnavailable`); its handling goes on unheard, its end logged at debug level. A request that is computing, or whose
 * answer has begun (an event stream), is not cut. `deadlineMs` 0: no deadline.
 */
export function requestDeadline(deps: { conn: Connection; logger: Logger; deadlineMs: number }): Middleware {
  const { logger, deadlineMs } = deps;
  if (deadlineMs <= 0) return (_ctx, next) => next();
  watchRequestCalls(deps.conn);
  return async (ctx, next) => {
    const calls = new RequestCalls();
    const handled = withRequestCalls(calls, next);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Dependency>((resolve) => {
      const look = () => {
        if (ctx.headerSent) return;
        const waited = calls.waitingOn(WAITING_MS);
        if (waited) resolve(waited);
        else timer = setTimeout(look, LOOK_AGAIN_MS);
      };
      timer = setTimeout(look, deadlineMs);
    });
    let dependency: Dependency | undefined;
    try {
      dependency = await Promise.race([handled.then(() => undefined), deadline]);
    } finally {
      clearTimeout(timer);
    }
    if (!dependency) return;
    handled.then(
      () => logger.debug({ method: ctx.method, path: ctx.path, dependency }, 'a request answered at its deadline ended later'),
      (err: unknown) => logger.debug({ method: ctx.method, path: ctx.path, dependency, err: String(err) }, 'a request answered at its deadline failed later'),
    );
    const answer = ctx.state.unavailableAnswer as UnavailableAnswer | undefined;
    throw dependencyUnavailable(dependency, answer?.extra, answer?.hint);
  };
}
