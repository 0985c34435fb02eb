import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ModelCallInput } from '../../workflows/types';
import { RUNNERS } from '../store/tasks';

type Outcome = 'completed' | 'failed' | 'cancelled';

/**
 * A worker's activity metrics, from an inbound interceptor around every activity (so no activity counts itself):
 * `ptr_activities_in_flight{activity}`, `ptr_activities_total{activity,outcome}` and, for `callModel`,
 * `ptr_provider_call_duration_seconds{runner,outcome}`. Metrics register once per registry, so build one factory per
 * registry and give it to every worker reporting there.
 */
export function activityMetrics(registry: Registry): ActivityInterceptorsFactory {
  const inFlight = new Gauge({
    name: 'ptr_activities_in_flight',
    help: 'Activities running on this worker now, by activity type.',
    labelNames: ['activity'] as const,
    registers: [registry],
  });
  const total = new Counter({
    name: 'ptr_activities_total',
    help: 'Activity executions (each attempt) that ended on this worker, by activity type and outcome.',
    labelNames: ['activity', 'outcome'] as const,
    registers: [registry],
  });
  const providerCalls = new Histogram({
    name: 'ptr_provider_call_duration_seconds',
    help: 'Duration of callModel attempts (the provider call, with loading the conversation and storing the answer), by runner.',
    labelNames: ['runner', 'outcome'] as const,
    // Model answers take from a fraction of a second to minutes (PROVIDER_TIMEOUT_MS defaults to 120 s).
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
    registers: [registry],
  });

  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const activity = ctx.info.activityType;
        const provider = activity === 'callModel' ? providerCalls.startTimer() : undefined;
        inFlight.inc({ activity });
        let outcome: Outcome = 'failed';
        try {
          const result = await next(input);
          outcome = 'completed';
          return result;
        } catch (err) {
          // Cancelled by the server, a lost heartbeat or the worker shutting down: the error is then whatever the
          // aborted work threw, so the signal says it, not the error.
          if (ctx.cancellationSignal.aborted) outcome = 'cancelled';
          throw err;
        } finally {
          inFlight.dec({ activity });
          total.inc({ activity, outcome });
          provider?.({ outcome, runner: runnerOf(input.args[0]) });
        }
      },
    },
  });
}

/** The runner of a callModel input, or `other`: a label value must come from a known set. */
function runnerOf(input: unknown): string {
  const runner = (input as Partial<ModelCallInput> | undefined)?.model?.runner;
  return runner !== undefined && RUNNERS.includes(runner) ? runner : 'other';
}
