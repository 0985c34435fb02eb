import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Config } from '../config';
import { requestCallsInterceptor } from '../http/request-calls';

/**
 * Gives every call to Temporal that has none a deadline `ms` ahead (a call that sets its own, such as a live read's
 * query, keeps it). First in the chain, so the SDK's retries of a failed call stay within the same deadline: a
 * stalled server surfaces as DEADLINE_EXCEEDED within about `ms`, never as a hang.
 */
export function deadlineInterceptor(ms: number): Interceptor {
  return (options, nextCall) => new InterceptingCall(nextCall(options.deadline ? options : { ...options, deadline: Date.now() + ms }));
}

/** The Temporal client of a service process: every call bounded by DEPENDENCY_TIMEOUT_MS. */
export async function connectTemporal(config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE' | 'DEPENDENCY_TIMEOUT_MS'>): Promise<Client> {
  const connection = await Connection.connect({
    address: config.TEMPORAL_ADDRESS,
    // The API's requests note their calls (http/request-calls.ts); a worker's calls are outside any request.
    interceptors: [requestCallsInterceptor(), deadlineInterceptor(config.DEPENDENCY_TIMEOUT_MS), makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}
