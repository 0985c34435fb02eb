import type { Client } from '@temporalio/client';
import type { Dependency } from './errors';
import type { Logger } from './logger';
import type { Db } from './store/connect';

/**
 * Readiness of a process (the API's `/readyz`, a worker's): every check runs at once, each within the deadline, and
 * the answer names each one `ok` or the reason it failed. Liveness (`/healthz`) checks nothing of this on purpose: a
 * process whose database is down is not broken, and restarting it would not help.
 */

/** A check that fails with a reason fit for the answer (no address, no driver text). */
export class NotReady extends Error {}

export type Check = () => Promise<unknown>;

export interface Readiness {
  ready: boolean;
  /** Each check's `ok` or reason, in the order given: the body of `/readyz`. */
  body: Record<string, string>;
}

/** MongoDB and Temporal, each asked the cheapest question that needs a round trip. */
export function dependencyChecks(deps: { db: Db; temporal: Client }, timeoutMs: number): Record<Dependency, Check> {
  return {
    // The driver's client rather than `conn.db`: it exists even when the first connection never succeeded.
    mongodb: () => deps.db.conn.getClient().db('admin').command({ ping: 1 }),
    // The deadline makes the SDK give up its own call too, instead of leaving it to wait on a stalled connection.
    temporal: () => deps.temporal.withDeadline(Date.now() + timeoutMs, () => deps.temporal.workflowService.getSystemInfo({})),
  };
}

/**
 * Runs every check at once. Never rejects, and answers within about `timeoutMs` whatever the checks do. Logs each
 * failure with its error (the answer gives only a short reason).
 */
export async function checkReadiness(checks: Record<string, Check>, timeoutMs: number, logger: Logger): Promise<Readiness> {
  const names = Object.keys(checks);
  const outcomes = await Promise.allSettled(names.map((name) => within(timeoutMs, checks[name]!)));
  const body: Record<string, string> = {};
  let ready = true;
  outcomes.forEach((outcome, i) => {
    const check = names[i]!;
    if (outcome.status === 'fulfilled') {
      body[check] = 'ok';
      return;
    }
    ready = false;
    body[check] = reasonOf(outcome.reason, timeoutMs);
    logger.warn({ err: outcome.reason, check, reason: body[check] }, 'not ready');
  });
  return { ready, body };
}

class TimedOut extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** The check's result, or TimedOut once `ms` have passed: a check that never settles cannot hold the answer. */
async function within(ms: number, check: Check): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimedOut(ms)), ms);
  });
  try {
    // A check that throws synchronously counts as failed, like one that rejects.
    return await Promise.race([Promise.resolve().then(check), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Names of the gRPC statuses a Temporal server answers when it cannot serve (4 DEADLINE_EXCEEDED is a timeout). */
const GRPC_STATUS: Record<number, string> = { 5: 'NOT_FOUND', 7: 'PERMISSION_DENIED', 8: 'RESOURCE_EXHAUSTED', 14: 'UNAVAILABLE', 16: 'UNAUTHENTICATED' };

/**
 * A short reason without the error's own text: driver messages carry host names and addresses, and `/readyz` needs
 * no session. The full error goes to the log.
 */
function reasonOf(err: unknown, timeoutMs: number): string {
  const timedOut = `did not answer within ${timeoutMs} ms`;
  if (err instanceof TimedOut) return timedOut;
  if (err instanceof NotReady) return err.message;
  const e = err as { name?: unknown; code?: unknown; metadata?: unknown; cause?: { code?: unknown } } | null;
  // The raw service call fails with grpc-js's error (a numeric `code` and `metadata`); the SDK's wrapper keeps it as `cause`.
  const grpc = e?.name === 'ServiceError' ? e.cause : e;
  if (typeof grpc?.code === 'number' && (e?.name === 'ServiceError' || e?.metadata !== undefined)) {
    return grpc.code === 4 ? timedOut : `unavailable (gRPC ${GRPC_STATUS[grpc.code] ?? `status ${grpc.code}`})`;
  }
  return `unavailable (${typeof e?.name === 'string' && /^\w{1,60}$/.test(e.name) ? e.name : 'error'})`;
}
