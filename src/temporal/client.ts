import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
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

/**
 * The Temporal client of a service process: every call bounded by DEPENDENCY_TIMEOUT_MS. `traced` (the process
 * traces, src/telemetry/tracing.ts): a workflow start carries the caller's trace context, so the run's workflow and
 * activities continue the trigger's trace.
 */
export async function connectTemporal(config: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE' | 'DEPENDENCY_TIMEOUT_MS'>, options: { traced?: boolean } = {}): Promise<Client> {
  const connection = await Connection.connect({
    address: config.TEMPORAL_ADDRESS,
    // The API's requests note their calls (http/request-calls.ts); a worker's calls are outside any request.
    interceptors: [requestCallsInterceptor(), deadlineInterceptor(config.DEPENDENCY_TIMEOUT_MS), makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  });
  const interceptors = options.traced ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, ...(interceptors ? { interceptors } : {}) });
}
