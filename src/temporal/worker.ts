import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities';
import { createServletRuntime } from '../../activities/servlets';
import { createTemplateSandbox } from '../../activities/template/sandbox';
import { createToolCaller } from '../../activities/tool-call';
import { loadInstallForRun } from '../store/installations';
import { ensureReconcileSchedule } from './reconcile-schedule';
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
  /** Closes the Temporal connections, the template threads and the servlet plugins (after `worker.run()` returned). */
  close(): Promise<void>;
}

/**
 * A worker with its real dependencies: the database, the keyring, template threads, a servlet runtime for tool
 * calls and a Temporal client (the reconciler's). Makes sure the reconciler's Schedule exists.
 */
export async function createWorker(deps: Omit<ActivityDeps, 'callTool' | 'templates' | 'temporal'>): Promise<RunningWorkerParts> {
  const { config } = deps;
  installTemporalRuntime(deps.logger);
  const servlets = createServletRuntime({ config, logger: deps.logger });
  const callTool = createToolCaller({
    servlets,
    loadInstall: (owner, profile, install) => loadInstallForRun(deps.db.models, deps.keyring, owner, profile, install),
  });
  const templates = createTemplateSandbox({ timeoutMs: config.TEMPLATE_TIMEOUT_MS, maxPromptBytes: config.RUN_PROMPT_MAX_BYTES });
  const clientConnection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE });
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const close = async () => {
    await servlets.close();
    await templates.close();
    await connection.close();
    await clientConnection.close();
  };
  try {
    await ensureReconcileSchedule(temporal, config);
    const worker = await Worker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workflowBundle(),
      activities: createActivities({ ...deps, callTool, templates, temporal }),
    });
    return { worker, close };
  } catch (err) {
    await close();
    throw err;
  }
}
