import { status } from '@grpc/grpc-js';
import { isGrpcServiceError } from '@temporalio/client';
import type { Dependency } from './errors';
import { isMongoUnavailable } from './store/connect';

/**
 * gRPC codes that say Temporal did not answer: DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE, CANCELLED (what a
 * call cut by its deadline while the SDK waited to retry it ends with), and INTERNAL, which is what the transport says
 * of a stream the server reset (an HTTP/2 RST_STREAM, as after a stalled server resumes) and what the server says of
 * its own fault: either way Temporal's, answered 503 with Retry-After, not a 500 of ours.
 */
const UNANSWERED: ReadonlySet<number> = new Set([status.CANCELLED, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED, status.UNAVAILABLE, status.INTERNAL]);

/** How deep in an error's causes the gRPC error may be (the SDK wraps it once or twice, e.g. an update's RPC timeout). */
const MAX_DEPTH = 4;

/**
 * Which dependency an error says did not answer: Temporal (a gRPC error of the codes above, anywhere in its first few
 * causes: the SDK's ServiceError and WorkflowUpdateRPCTimeoutOrCancelledError wrap it) or MongoDB.
 */
export function unavailableDependency(err: unknown): Dependency | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < MAX_DEPTH; e = e.cause, depth++) {
    if (isGrpcServiceError(e) && UNANSWERED.has(e.code)) return 'temporal';
  }
  if (isMongoUnavailable(err)) return 'mongodb';
  return undefined;
}
