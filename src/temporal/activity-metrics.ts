import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FirstModelCall, FirstModelCallInput, ModelCallInput, ModelTurn, RunStatus, SamplingInput, ToolOutcome } from '../contract/types';
import { RUNNERS } from '../store/tasks';

type Outcome = 'completed' | 'failed' | 'cancelled';

/** Distinct model names a worker's token metrics label; later ones are counted as `other` (bounded label values). */
const MODEL_LABELS = 20;

/**
 * A worker's activity metrics, from an inbound interceptor around every activity (so no activity counts itself):
 * `ptr_activities_in_flight{activity}`, `ptr_activities_total{activity,outcome}`; for `callModel` (and a run's first
 * call, `firstModelCall`),
 * `ptr_provider_call_duration_seconds{runner,outcome}` and `ptr_provider_tokens_total{runner,model,kind}`; for
 * `callTool`, `ptr_servlet_calls_total{outcome}`; an MCP call's sampling requests (`callMcpTool`'s `sampled`) add to
 * the tokens as the run's model calls; and `ptr_run_status_transitions_total{to}`, the status changes
 * the runs' workflows write (a run ended by the reconciler or a read is not counted here). Metrics register once per
 * registry, so build one factory per registry and give it to every worker reporting there.
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

  const tokens = new Counter({
    name: 'ptr_provider_tokens_total',
    help: 'Tokens the providers reported, by runner, model (the first 20 seen; the rest as "other") and kind (input, output).',
    labelNames: ['runner', 'model', 'kind'] as const,
    registers: [registry],
  });
  const servletCalls = new Counter({
    name: 'ptr_servlet_calls_total',
    help: 'Tool calls in servlets, by outcome: ok, error (the servlet\'s fault, given to the model), failed or cancelled.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const transitions = new Counter({
    name: 'ptr_run_status_transitions_total',
    help: 'Run status changes written by the runs\' workflows, by the status entered.',
    labelNames: ['to'] as const,
    registers: [registry],
  });
  const models = new Set<string>();
  const modelLabel = (model: unknown) => {
    if (typeof model !== 'string') return 'other';
    if (!models.has(model) && models.size < MODEL_LABELS) models.add(model);
    return models.has(model) ? model : 'other';
  };
  /** Tokens a provider reported. */
  const used = (labels: { runner: string; model: string }, usage: { input?: number; output?: number } | undefined) => {
    tokens.inc({ ...labels, kind: 'input' }, usage?.input ?? 0);
    tokens.inc({ ...labels, kind: 'output' }, usage?.output ?? 0);
  };
  /** A model call's answer: its tokens, and the run's end when the call wrote it. */
  const answered = (labels: { runner: string; model: string }, turn: (ModelTurn & { finishedAt?: number }) | undefined) => {
    used(labels, turn?.usage);
    if (turn?.finishedAt !== undefined) transitions.inc({ to: 'ready' });
  };
  /** What a completed activity's result says: tokens, tool outcomes, status changes. */
  const counted = (activity: string, input: unknown, result: unknown) => {
    if (activity === 'callModel') {
      const call = input as ModelCallInput;
      answered({ runner: runnerOf(call), model: modelLabel(call?.model?.model) }, result as ModelTurn & { finishedAt?: number });
    } else if (activity === 'firstModelCall' || activity === 'prepareAndCallModel') {
      const first = result as FirstModelCall;
      if (!first || 'unprepared' in first) return;
      transitions.inc({ to: 'running' });
      answered({ runner: runnerOf(input), model: modelLabel(first.started?.prepared?.model) }, first);
    } else if (activity === 'callTool') {
      servletCalls.inc({ outcome: (result as ToolOutcome)?.isError ? 'error' : 'ok' });
    } else if (activity === 'callMcpTool') {
      // The MCP server's sampling requests were calls of the run's model (docs/mcp.md, "Sampling").
      const sampled = (result as ToolOutcome)?.sampled;
      const model = (input as { sampling?: SamplingInput })?.sampling?.model;
      if (sampled && model) used({ runner: runnerOf({ runner: model.runner }), model: modelLabel(model.model) }, sampled);
    } else if (activity === 'prepareRun' || activity === 'prepareStart') {
      transitions.inc({ to: 'running' });
    } else if (activity === 'recordRun') {
      const write = input as { status?: RunStatus; transition?: boolean };
      if (write?.transition && write.status) transitions.inc({ to: write.status });
    }
  };

  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const activity = ctx.info.activityType;
        const provider = MODEL_CALLS.has(activity) ? providerCalls.startTimer() : undefined;
        inFlight.inc({ activity });
        let outcome: Outcome = 'failed';
        try {
          const result = await next(input);
          outcome = 'completed';
          try {
            counted(activity, input.args[0], result);
          } catch {
            // A metric must never fail an activity whose work is done (its effects are written).
          }
          return result;
        } catch (err) {
          // Cancelled by the server, a lost heartbeat or the worker shutting down: the error is then whatever the
          // aborted work threw, so the signal says it, not the error.
          if (ctx.cancellationSignal.aborted) outcome = 'cancelled';
          throw err;
        } finally {
          inFlight.dec({ activity });
          total.inc({ activity, outcome });
          if (activity === 'callTool' && outcome !== 'completed') servletCalls.inc({ outcome });
          provider?.({ outcome, runner: runnerOf(input.args[0]) });
        }
      },
    },
  });
}

/** The activities that call the run's model (firstModelCall: a run's first; prepareAndCallModel: that of runs started before 2026-11-28). */
export const MODEL_CALLS: ReadonlySet<string> = new Set(['callModel', 'firstModelCall', 'prepareAndCallModel']);

/** The runner of a callModel (or a first call's) input, or `other`: a label value must come from a known set. */
function runnerOf(input: unknown): string {
  const call = input as (Partial<ModelCallInput> & Partial<Pick<FirstModelCallInput, 'runner'>>) | undefined;
  const runner: string | undefined = call?.model?.runner ?? call?.runner;
  return runner !== undefined && (RUNNERS as readonly string[]).includes(runner) ? runner : 'other';
}
