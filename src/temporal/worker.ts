import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode, type State, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import { createActivities, type ActivityDeps } from '../../activities';
import { pollFollowedRuns } from '../../activities/followed-runs';
import { createServletRuntime } from '../../activities/servlets';
import { createTemplateSandbox } from '../../activities/template/sandbox';
import { createProviderFetch } from '../../activities/providers/http';
import { createToolCaller } from '../../activities/tool-call';
import { cachedInstallLoader, createMcpTaskSteps, createMcpToolCaller } from '../../activities/mcp-call';
import { createMcpTasks } from '../mcp/tasks';
import { createMcpSessionPool } from '../mcp/pool';
import { mcpClientOptions } from '../mcp/options';
import { mcpInstallForCall } from '../store/mcp-installs';
import { mcpTaskQueue, toolTaskQueue } from '../contract/constants';
import { loadInstallForRun } from '../store/installations';
import { ensureReconcileSchedule } from './reconcile-schedule';
import { ensureRetentionSchedule } from './retention-schedule';
import { keepSchedules } from './schedules';
import { installTemporalRuntime } from './runtime';
import { connectTemporal } from './client';
import { activityMetrics } from './activity-metrics';
import { ownerSlotCap } from './owner-slots';
import { createRegistry } from '../metrics';
import type { Tracing } from '../telemetry/tracing';
import { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** The SDK's activity interceptors of a tracing worker: a span per activity, the SDK's log entries of it with its `trace_id`. */
const tracedActivity: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/**
 * Bundles workflows/ once per process (webpack, a few seconds); every worker reuses the bundle. `traced`: with the
 * SDK's OpenTelemetry workflow interceptors (only a tracing worker's bundle holds them).
 */
const bundles = new Map<boolean, Promise<WorkflowBundleWithSourceMap>>();
export function workflowBundle(options: { traced?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const traced = options.traced === true;
  let bundle = bundles.get(traced);
  if (!bundle) {
    const workflowInterceptorModules = traced ? [require.resolve('../telemetry/workflow-interceptors')] : [];
    bundle = bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), workflowInterceptorModules, logger: quietBundlerLogger });
    bundles.set(traced, bundle);
  }
  return bundle;
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

/** The workers of one process, run and stopped together. */
export interface RunningWorkerParts {
  /** Runs until shut down (by `shutdown()` or the SDK's signal handlers); rejects if a worker fails. */
  run(): Promise<void>;
  shutdown(): void;
  getState(): State;
  /** Closes the Temporal connections, the template threads, the servlet plugins and provider connections (after `run()`). */
  close(): Promise<void>;
  /** The workers' Temporal client, for readiness checks (closed by `close()`). */
  temporal: Client;
  /** The workers' own metrics (activities, provider calls), for `/metrics`. */
  metrics: Registry;
}

/**
 * The workers of a process, with their real dependencies: the database, the keyring, template threads, a servlet
 * runtime, pooled provider connections and a Temporal client (the reconciler's). Three workers on one connection:
 * workflows, provider calls and bookkeeping on TEMPORAL_TASK_QUEUE, up to WORKER_MAX_PROVIDER_CALLS calls at once
 * (they wait), WORKER_MAX_PROVIDER_CALLS_PER_OWNER of them for one owner's runs (./owner-slots.ts); tool calls on its
 * `.tools` queue, up to WORKER_MAX_TOOL_CALLS (they compute); MCP tool calls on its `.mcp` queue, up to
 * WORKER_MAX_MCP_CALLS (they wait on the network). Makes sure the reconciler's Schedule exists, and the retention
 * Schedule exactly while RUN_RETENTION_DAYS is set.
 */
export async function createWorker(
  deps: Omit<ActivityDeps, 'callTool' | 'callMcpTool' | 'mcpTasks' | 'templates' | 'temporal' | 'providerFetch'> & { tracing?: Tracing },
): Promise<RunningWorkerParts> {
  const { tracing, ...activityDeps } = deps;
  const { config } = deps;
  installTemporalRuntime(deps.logger);
  const servlets = createServletRuntime({ config, logger: deps.logger });
  const callTool = createToolCaller({
    servlets,
    loadInstall: (owner, profile, install) => loadInstallForRun(deps.db.models, deps.keyring, owner, profile, install),
  });
  const mcpCalls = createMcpSessionPool(mcpClientOptions(config));
  // An install opened for a call is reused for a moment (a store read costs more than the call's own work).
  const loadMcpInstall = cachedInstallLoader((owner, profile, name) => mcpInstallForCall(deps.db.models, deps.keyring, { owner, profile, name }));
  const callMcpTool = createMcpToolCaller({ calls: mcpCalls, loadInstall: loadMcpInstall });
  const mcpTasks = createMcpTaskSteps({ tasks: createMcpTasks(mcpClientOptions(config)), loadInstall: loadMcpInstall });
  const templates = createTemplateSandbox({ timeoutMs: config.TEMPLATE_TIMEOUT_MS, maxPromptBytes: config.RUN_PROMPT_MAX_BYTES });
  const provider = createProviderFetch();
  const followed = pollFollowedRuns(deps.db.models, deps.logger);
  const temporal = await connectTemporal(config, { traced: !!tracing });
  const clientConnection = temporal.connection;
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  let schedules: { settled: Promise<void>; stop(): void } | undefined;
  const close = async () => {
    schedules?.stop();
    followed.stop();
    await servlets.close();
    await mcpCalls.close();
    await templates.close();
    await provider.close();
    await connection.close();
    await clientConnection.close();
  };
  try {
    schedules = keepSchedules(
      () => Promise.all([ensureReconcileSchedule(temporal, config), ensureRetentionSchedule(temporal, config)]),
      deps.logger,
    );
    await schedules.settled;
    const activities = createActivities({ ...activityDeps, callTool, callMcpTool, mcpTasks, templates, temporal, providerFetch: provider.fetch, followed });
    const { callTool: toolActivity, callMcpTool: mcpActivity, startMcpTask, followMcpTask, mcpTaskResult, answerMcpTask, cancelMcpTask, ...onMainQueue } = activities;
    const metrics = createRegistry();
    const measured = activityMetrics(metrics);
    // Tracing: each activity a span (continuing its workflow's), outermost, so a call the owner's cap refuses shows too.
    const traced = tracing ? [tracedActivity] : [];
    const interceptors = { activity: [...traced, measured] };
    const main = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workflowBundle({ traced: !!tracing }),
      // The workflows' spans leave the sandbox through this sink, into the process's span processor.
      ...(tracing ? { sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) } } : {}),
      activities: onMainQueue,
      maxConcurrentActivityTaskExecutions: config.WORKER_MAX_PROVIDER_CALLS,
      maxCachedWorkflows: config.WORKER_WORKFLOW_CACHE,
      // The owner's cap first: a call it refuses never started, so the metrics do not count it as one.
      interceptors: { activity: [...traced, ownerSlotCap(config.WORKER_MAX_PROVIDER_CALLS_PER_OWNER, metrics), measured] },
    });
    const tools = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: toolTaskQueue(config.TEMPORAL_TASK_QUEUE),
      activities: { callTool: toolActivity },
      maxConcurrentActivityTaskExecutions: config.WORKER_MAX_TOOL_CALLS,
      interceptors,
    });
    const mcp = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: mcpTaskQueue(config.TEMPORAL_TASK_QUEUE),
      activities: { callMcpTool: mcpActivity, startMcpTask, followMcpTask, mcpTaskResult, answerMcpTask, cancelMcpTask },
      maxConcurrentActivityTaskExecutions: config.WORKER_MAX_MCP_CALLS,
      interceptors,
    });
    const workers = [main, tools, mcp];
    return {
      async run() {
        // Both stop when either does: a worker that fails takes the other down, so the process exits and is restarted.
        const runs = workers.map((w) => w.run().finally(() => stopAll()));
        const outcomes = await Promise.allSettled(runs);
        const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
        if (failed) throw failed.reason;
      },
      shutdown: () => stopAll(),
      getState: () => main.getState(),
      close,
      temporal,
      metrics,
    };
    function stopAll() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    }
  } catch (err) {
    await close();
    throw err;
  }
}
