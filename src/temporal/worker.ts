import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities';
import { createServletRuntime } from '../../activities/servlets';
import { createToolCaller } from '../../activities/tool-call';
import { loadInstallForRun } from '../store/installations';
import { installTemporalRuntime } from './runtime';

/** Bundles workflows/ once per process (webpack, a few seconds); every worker reuses the bundle. */
let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietBundlerLogger });
  return bundle;
}

const noop = () => undefined;
const quietBundlerLogger = { trace: noop, debug: noop, info: noop, warn: noop, error: console.error, log: noop };

export interface RunningWorkerParts {
  worker: Worker;
  /** Closes the Temporal connection and the servlet plugins (call after `worker.run()` has returned). */
  close(): Promise<void>;
}

/** A worker with its real dependencies: the database, the keyring and a servlet runtime for tool calls. */
export async function createWorker(deps: Omit<ActivityDeps, 'callTool'>): Promise<RunningWorkerParts> {
  installTemporalRuntime(deps.logger);
  const servlets = createServletRuntime({ config: deps.config, logger: deps.logger });
  const callTool = createToolCaller({
    servlets,
    loadInstall: (owner, profile, install) => loadInstallForRun(deps.db.models, deps.keyring, owner, profile, install),
  });
  const connection = await NativeConnection.connect({ address: deps.config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities({ ...deps, callTool }),
  });
  return {
    worker,
    async close() {
      await servlets.close();
      await connection.close();
    },
  };
}
