import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities';
import { installTemporalRuntime } from './runtime';

/** Bundles workflows/ once per process (webpack, a few seconds); every worker reuses the bundle. */
let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietBundlerLogger });
  return bundle;
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export async function createWorker(deps: ActivityDeps): Promise<{ worker: Worker; connection: NativeConnection }> {
  installTemporalRuntime(deps.logger);
  const connection = await NativeConnection.connect({ address: deps.config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities(deps),
  });
  return { worker, connection };
}
