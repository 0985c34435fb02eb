import type { Dependency } from './errors';
import { isMongoUnavailable } from './store/connect';

type Cause = { name?: string; cause?: unknown; code?: unknown } | null | undefined;

/**
 * gRPC codes that say Temporal did not answer: 4 DEADLINE_EXCEEDED, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE, and 1
 * CANCELLED, which is what a call cut by its deadline while the SDK waited to retry it ends with.
 */
const UNANSWERED = [1, 4, 8, 14];

/** The gRPC status code of an error, as the SDK wraps it (a ServiceError's cause) or bare (code and details). */
const grpcCode = (e: NonNullable<Cause>): unknown => (e.name === 'ServiceError' ? (e.cause as Cause)?.code : typeof e.code === 'number' && 'details' in e ? e.code : undefined);

/**
 * Which dependency an error says did not answer: Temporal (gRPC deadline, unavailable) or MongoDB. The gRPC error may
 * be a cause a few levels down (an update whose RPC timed out: WorkflowUpdateRPCTimeoutOrCancelledError wraps it).
 */
export function unavailableDependency(err: unknown): Dependency | undefined {
  for (let e = err as Cause, depth = 0; e && typeof e === 'object' && depth < 4; e = e.cause as Cause, depth++) {
    if (UNANSWERED.includes(Number(grpcCode(e)))) return 'temporal';
  }
  if (isMongoUnavailable(err)) return 'mongodb';
  return undefined;
}
