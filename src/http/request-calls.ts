import { AsyncLocalStorage } from 'node:async_hooks';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import type { Db } from '../store/connect';
import type { Dependency } from '../errors';

/** The store's connection (its commands are watched here). */
type Connection = Db['conn'];

/**
 * The dependency calls of each HTTP request still waiting for their answer, so that a request past its deadline
 * (middleware/deadline.ts) can be answered with the dependency it waits on. A request's calls are found by its
 * AsyncLocalStorage context: Temporal's by a gRPC interceptor (`requestCallsInterceptor`, in the API's Temporal
 * connection), MongoDB's by mongoose's `operation-start` and `operation-end` events (`watchRequestCalls`). Calls made
 * outside a request (a worker's, a schedule's) are not counted.
 */
export class RequestCalls {
  private readonly open = new Map<number, { dependency: Dependency; since: number }>();
  private next = 0;

  /** Notes a call starting now; the function returned notes its end (once, however often it is called). */
  begin(dependency: Dependency): () => void {
    const id = this.next++;
    this.open.set(id, { dependency, since: Date.now() });
    return () => this.open.delete(id);
  }

  /** The dependency of the request's oldest call that has been waiting at least `ms`, if any. */
  waitingOn(ms: number): Dependency | undefined {
    const before = Date.now() - ms;
    let oldest: { dependency: Dependency; since: number } | undefined;
    for (const call of this.open.values()) if (call.since <= before && (!oldest || call.since < oldest.since)) oldest = call;
    return oldest?.dependency;
  }
}

const storage = new AsyncLocalStorage<RequestCalls>();

/** Runs `fn` (a request's handling) with its calls noted in `calls`. */
export const withRequestCalls = <T>(calls: RequestCalls, fn: () => T): T => storage.run(calls, fn);

/** Notes each Temporal call made within a request (first in the chain, so the SDK's retries of it are one call). */
export function requestCallsInterceptor(): Interceptor {
  return (options, nextCall) => {
    const calls = storage.getStore();
    if (!calls) return new InterceptingCall(nextCall(options));
    const end = calls.begin('temporal');
    return new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            end();
            nextStatus(status);
          },
        });
      },
    });
  };
}

type OperationEvent = { _id: { toString(): string }; method: string; result?: unknown };
type Cursor = { once(event: 'close', listener: () => void): unknown };
const isCursor = (value: unknown): value is Cursor => typeof (value as Partial<Cursor> | null)?.once === 'function';
const watched = new WeakSet<Connection>();

/**
 * Notes each MongoDB operation made within a request on `conn` (once per connection, whatever number of apps share
 * it). A cursor (find, aggregate) is made at once and its documents come later: it is a call until the driver closes
 * it (read to its end, failed, or closed), which a cursor left unread never is.
 */
export function watchRequestCalls(conn: Connection): void {
  if (watched.has(conn)) return;
  watched.add(conn);
  const open = new Map<string, { calls: RequestCalls; end: () => void }>();
  conn.on('operation-start', (op: OperationEvent) => {
    const calls = storage.getStore();
    if (calls) open.set(op._id.toString(), { calls, end: calls.begin('mongodb') });
  });
  conn.on('operation-end', (op: OperationEvent) => {
    const id = op._id.toString();
    const call = open.get(id);
    if (!call) return;
    open.delete(id);
    if (isCursor(op.result)) op.result.once('close', call.end);
    else call.end();
  });
}
