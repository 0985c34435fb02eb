import type { Plugin } from '@extism/extism';

/**
 * The few places we reach into @extism/extism@2.0.0-rc13's worker plugin (the version is pinned exactly, and each
 * helper checks the shape it expects and does nothing otherwise). Why each is needed is in notes/extism.md and in
 * the comments below.
 */
interface WorkerPluginShape {
  opts?: { timeoutMs?: number | null };
  worker?: { on(event: 'error', listener: (err: unknown) => void): unknown } | null;
  sharedData?: SharedArrayBuffer;
}

/**
 * The SDK's own call timeout, once it fires, restarts the worker while we discard the plugin anyway, and if the
 * plugin is closed first its pending timer later spawns a worker that nobody owns (which keeps the process
 * alive). The caller enforces call deadlines itself and closes the plugin instead; the SDK's timeout still
 * bounds instantiation. Returns false when the shape is not the expected one (then the SDK timeout stays).
 */
export function disableSdkCallTimeout(plugin: Plugin): boolean {
  const opts = (plugin as unknown as WorkerPluginShape).opts;
  if (!opts || !('timeoutMs' in opts)) return false;
  opts.timeoutMs = null;
  return true;
}

/** An uncaught error in the worker is emitted on the Worker; with no listener it would crash this process. */
export function onWorkerError(plugin: Plugin, listener: (err: unknown) => void): void {
  const worker = (plugin as unknown as WorkerPluginShape).worker;
  if (worker && typeof worker.on === 'function') worker.on('error', listener);
}

const SAB_BASE_OFFSET = 4;
const DRAIN_EVERY_MS = 10;

/**
 * When a worker is terminated while a host function (an HTTP request) is still running on this thread, the SDK
 * later writes the answer into the shared buffer and waits, forever, for the dead worker to read it, with a 0 ms
 * interval that keeps the process alive. Acknowledging in the worker's place lets that write finish. Runs until
 * `settled()` is true, then a little longer for the write that follows the request.
 */
export function drainHostCalls(plugin: Plugin, settled: () => boolean, tailMs = 250): void {
  const shared = (plugin as unknown as WorkerPluginShape).sharedData;
  if (!(shared instanceof SharedArrayBuffer)) return;
  const flag = new Int32Array(shared);
  let settledAt: number | undefined;
  const timer = setInterval(() => {
    Atomics.store(flag, 0, SAB_BASE_OFFSET);
    Atomics.notify(flag, 0);
    if (settledAt === undefined && settled()) settledAt = Date.now();
    if (settledAt !== undefined && Date.now() - settledAt >= tailMs) clearInterval(timer);
  }, DRAIN_EVERY_MS);
  timer.unref();
}
