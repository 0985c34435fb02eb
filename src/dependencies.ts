import type { Dependency } from './errors';
import { isMongoUnavailable } from './store/connect';

/** Which dependency an error says did not answer: Temporal (gRPC deadline, unavailable) or MongoDB. */
export function unavailableDependency(err: unknown): Dependency | undefined {
  const e = err as { name?: string; cause?: unknown; code?: number } | null;
  if (!e) return undefined;
  // gRPC, as the SDK wraps it or bare: 4 DEADLINE_EXCEEDED, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE, and 1 CANCELLED,
  // which is what a call cut by its deadline while the SDK waited to retry it ends with.
  const grpcCode = e.name === 'ServiceError' ? (e.cause as { code?: number } | undefined)?.code : typeof e.code === 'number' && 'details' in e ? e.code : undefined;
  if (grpcCode !== undefined && [1, 4, 8, 14].includes(Number(grpcCode))) return 'temporal';
  if (isMongoUnavailable(err)) return 'mongodb';
  return undefined;
}
