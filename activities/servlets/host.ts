import createPlugin, { type ExtismPluginOptions, type Plugin } from '@extism/extism';
import type { Dispatcher } from 'undici';
import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import { rejectionText, ServletError } from './errors';
import { createGuardedFetch } from './guarded-fetch';
import { linkedAbort } from '../linked-abort';
import { compileServlet, memoryPages } from './module';
import type { NetworkPolicy } from '../../src/net/network-policy';
import { decodeOutput, type DescribeResult } from './results';
import type { CompiledModule } from './wasm-api';
import { disableSdkCallTimeout, drainHostCalls, onWorkerError } from './sdk-internals';

/** What every plugin of a runtime shares. */
export interface HostDeps {
  config: Config;
  logger: Logger;
  policy: NetworkPolicy;
  dispatcher: Dispatcher;
}

export type Invocation = { ok: true; output: Uint8Array | null } | { ok: false; reason: string; poisoned: boolean };

/**
 * A request must hand its answer back this long before the call's deadline, while the worker still listens: a fifth
 * of the call's time (at least 100 ms, at most 1 s), so the servlet still gets to answer on a loaded machine.
 */
const handoffMargin = (timeoutMs: number) => Math.min(1_000, Math.max(100, timeoutMs / 5));
/** Closing a worker should take milliseconds; past this the plugin is abandoned rather than awaited. */
const CLOSE_TIMEOUT_MS = 5_000;
const PLUGIN_ERROR = 'Plugin-originated error: ';

/**
 * Loaded into each plugin worker before the SDK. An instantiation failure (bad import, trapping start or
 * `_initialize`) is otherwise an uncaught error in the worker, emitted on a Worker object nobody listens to, which
 * crashes this process. This reports it as an unexpected message (createPlugin rejects with it at once) and ends
 * the worker.
 */
const WORKER_PRELOAD = `import { parentPort } from 'node:worker_threads';
process.on('uncaughtException', (err) => {
  try { parentPort?.postMessage({ type: 'servlet worker failed: ' + String(err?.message ?? err) }); } finally { process.exit(1); }
});`;

/**
 * One warm Extism worker plugin for one install: no file system, network only through the guarded fetch, the
 * guest's memory capped by its compiled module (module.ts), one call at a time. Calls never reject and never
 * hang: a call past its deadline is stopped by closing the plugin.
 */
export class ServletInstance {
  #poisoned = false;
  #closing: Promise<void> | undefined;
  #deadline = 0;
  #abort = new AbortController();
  #inflight = 0;
  #closed!: () => void;
  readonly #closedSignal = new Promise<'closed'>((resolve) => (this.#closed = () => resolve('closed')));

  private plugin!: Plugin;

  private constructor(
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /** Throws an Error whose message says why the servlet could not start. */
  static async create(options: {
    module: CompiledModule;
    config: Record<string, string>;
    domains: string[] | null;
    deps: HostDeps;
  }): Promise<ServletInstance> {
    const { config: settings, logger, policy, dispatcher } = options.deps;
    const instance = new ServletInstance(settings.SERVLET_CALL_TIMEOUT_MS, logger);
    const guarded = createGuardedFetch({
      policy,
      dispatcher,
      domains: options.domains,
      maxResponseBytes: settings.SERVLET_MAX_RESPONSE_BYTES,
      maxRedirects: settings.SERVLET_MAX_REDIRECTS,
      logger,
    });
    const plugin = await createPlugin(
      { wasm: [{ module: options.module }] },
      pluginOptions(settings, { config: options.config, fetch: instance.#fetchWithinCall(guarded) }),
    ).catch((err: unknown) => {
      throw new Error(startFailure(err, settings.SERVLET_CALL_TIMEOUT_MS));
    });
    instance.plugin = plugin;
    if (!disableSdkCallTimeout(plugin)) logger.warn('extism plugin shape changed: the SDK call timeout stays on');
    onWorkerError(plugin, (err) => {
      instance.#poisoned = true;
      logger.warn({ err: rejectionText(err) }, 'servlet worker failed');
    });
    return instance;
  }

  get healthy(): boolean {
    return !this.#poisoned && this.#closing === undefined;
  }

  /**
   * Runs an export; never rejects. `poisoned` means the plugin must not be used again. `signal` stops the call (its
   * caller was cancelled): the plugin is poisoned, so the pool closes it and its thread with it.
   */
  async invoke(fn: 'describe' | 'call', input?: string, signal?: AbortSignal): Promise<Invocation> {
    if (!this.healthy) return { ok: false, reason: 'servlet plugin is closed', poisoned: true };
    if (signal?.aborted) return { ok: false, reason: `servlet ${fn} cancelled`, poisoned: false };
    this.#deadline = Date.now() + this.timeoutMs;
    this.#abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.timeoutMs)));
    let onAbort: (() => void) | undefined;
    const cancelled = new Promise<'cancelled'>((resolve) => signal?.addEventListener('abort', (onAbort = () => resolve('cancelled')), { once: true }));
    try {
      const result = await Promise.race([this.plugin.call(fn, input), deadline, this.#closedSignal, cancelled]);
      if (result === 'timeout' || result === 'closed' || result === 'cancelled') {
        this.#poisoned = true;
        const reason =
          result === 'timeout' ? `servlet ${fn} timed out after ${this.timeoutMs} ms` : result === 'cancelled' ? `servlet ${fn} cancelled` : 'servlet runtime is shutting down';
        return { ok: false, reason, poisoned: true };
      }
      return { ok: true, output: result ? result.bytes() : null };
    } catch (err) {
      const text = rejectionText(err);
      // error_set and a non-zero return: the servlet said it failed; its instance is intact
      if (text.startsWith(PLUGIN_ERROR)) return { ok: false, reason: `servlet ${fn} failed: ${text.slice(PLUGIN_ERROR.length)}`, poisoned: false };
      this.#poisoned = true;
      return { ok: false, reason: `servlet ${fn} crashed: ${text}`, poisoned: true };
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      this.#abort.abort();
    }
  }

  /**
   * Frees what the last call left in the SDK's buffers (it keeps every call's input and output otherwise). A
   * plugin whose worker does not answer within the call time limit is poisoned, so that a dead worker cannot hold
   * its pool slot forever.
   */
  async recycle(): Promise<boolean> {
    if (!this.healthy) return false;
    let timer: NodeJS.Timeout | undefined;
    const tooSlow = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.timeoutMs)));
    const reset = await Promise.race([this.plugin.reset().catch(() => false), tooSlow]);
    clearTimeout(timer);
    if (!reset) this.#poisoned = true;
    return reset;
  }

  /** Ends the worker; a call still running resolves as "shutting down". Never rejects. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed();
      this.#abort.abort();
      if (this.#inflight > 0) drainHostCalls(this.plugin, () => this.#inflight === 0);
      let timer: NodeJS.Timeout | undefined;
      const tooSlow = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)));
      await Promise.race([this.plugin.close().catch((err: unknown) => this.logger.warn({ err: rejectionText(err) }, 'closing a servlet plugin failed')), tooSlow]);
      clearTimeout(timer);
    })();
    return this.#closing;
  }

  /** The guarded fetch, bounded by the running call's deadline and cut when the call ends. */
  #fetchWithinCall(guarded: typeof fetch): typeof fetch {
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const remaining = this.#deadline - Date.now() - handoffMargin(this.timeoutMs);
      if (remaining <= 0 || this.#abort.signal.aborted) {
        return new Response("servlet network request failed: no time left in the servlet's call", { status: 504 });
      }
      this.#inflight++;
      // The guarded fetch reads the whole body before it answers, so the request is over when it returns.
      const request = linkedAbort([this.#abort.signal], remaining);
      try {
        return await guarded(input, { ...init, signal: request.signal });
      } finally {
        request.release();
        this.#inflight--;
      }
    }) as typeof fetch;
  }
}

/**
 * Extism options for a servlet: a worker (the only mode with time limits and HTTP on Node 20), WASI with no
 * directory, the install's config, host-side buffers within the memory budget.
 */
export function pluginOptions(settings: Config, install: { config: Record<string, string>; fetch: typeof fetch }): ExtismPluginOptions {
  return {
    runInWorker: true,
    useWasi: true,
    allowedPaths: {},
    // every URL passes the SDK's own host check (it throws, and a throwing host function poisons the plugin);
    // the guarded fetch decides instead. Its glob `*` misses an empty host (file:, data:) and a leading dot.
    allowedHosts: ['*', '.*', ''],
    enableWasiOutput: false,
    timeoutMs: settings.SERVLET_CALL_TIMEOUT_MS,
    config: install.config,
    fetch: install.fetch,
    memory: {
      maxPages: memoryPages(settings.SERVLET_MAX_MEMORY_MB),
      maxHttpResponseBytes: settings.SERVLET_MAX_RESPONSE_BYTES + 1,
      maxVarBytes: settings.SERVLET_MAX_RESPONSE_BYTES,
    },
    logLevel: 'silent',
    nodeWorkerArgs: {
      name: 'servlet',
      execArgv: ['--disable-warning=ExperimentalWarning', `--import=data:text/javascript,${encodeURIComponent(WORKER_PRELOAD)}`],
    },
  };
}

/** A readable reason from createPlugin's rejection (see WORKER_PRELOAD for the "unexpected message" form). */
function startFailure(err: unknown, timeoutMs: number): string {
  const text = rejectionText(err);
  const reported = /servlet worker failed: ([\s\S]*)\)$/.exec(text);
  if (reported) return `servlet could not start: ${reported[1]}`;
  if (/timed out while waiting for plugin to instantiate/.test(text)) {
    return `servlet could not start within ${timeoutMs} ms (its start-up code may loop)`;
  }
  return `servlet could not start: ${text}`;
}

/**
 * Compiles a module and runs its `describe` once, in a fresh plugin with no config and no network. Throws
 * ServletError naming why: it does not compile, lacks an export, cannot start, describe fails or times out, or
 * answers with bad JSON or a bad shape.
 */
export async function describeModule(bytes: Uint8Array, deps: HostDeps): Promise<DescribeResult> {
  const module = await compileServlet(bytes, deps.config.SERVLET_MAX_MEMORY_MB);
  const instance = await ServletInstance.create({ module, config: {}, domains: [], deps }).catch((err: Error) => {
    throw new ServletError(err.message);
  });
  try {
    const outcome = await instance.invoke('describe');
    if (!outcome.ok) throw new ServletError(outcome.reason);
    const decoded = decodeOutput<DescribeResult>(outcome.output, 'describe', deps.config.SERVLET_MAX_RESPONSE_BYTES);
    if (!decoded.ok) throw new ServletError(decoded.reason);
    return decoded.value;
  } finally {
    await instance.close();
  }
}
