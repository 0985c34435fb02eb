import type { ChildProcess } from 'node:child_process';
import { ManagedProcess, workerSpec } from './managed-process';

/**
 * A worker in its own process (src/worker.ts, as operators run it), so a test can kill it for real or run several.
 * Resolves once it polls; the caller kills it (SIGKILL in `afterEach` is fine). With `logDir`, its output is kept
 * there (`worker.<n>.log`).
 */
export async function startWorkerProcess(env: Record<string, string>, logDir?: string): Promise<ChildProcess> {
  const worker = new ManagedProcess('worker', workerSpec(env), logDir);
  await worker.start();
  return worker.child!;
}
