import crypto from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import type { InstallForRun } from '../../src/store/installations';
import { ServletError } from './errors';
import { describeModule, ServletInstance, type HostDeps } from './host';
import { compileServlet, contentAddress } from './module';
import { parseNetworkPolicy } from '../../src/net/network-policy';
import { createPinnedAgent } from '../../src/net/pinned-agent';
import { InstancePool } from './pool';
import { decodeOutput, toolError, type CallToolResult, type DescribeResult } from './results';
import type { CompiledModule } from './wasm-api';

export { checkAddress, checkUrl } from '../../src/net/address-guard';
export { ServletError } from './errors';
export { contentAddress } from './module';
export type { CallToolResult, DescribeResult, ToolDescription } from './results';

export interface ServletCallRequest {
  name: string;
  arguments: Record<string, unknown>;
}

/** An install as the runtime calls it: what a run loads of it (store/installations.ts), and a stable key. */
export type InstallRef = Omit<InstallForRun, 'modifiedAt'> & {
  /** Stable id of the install. */
  key: string;
};

export interface ServletRuntime {
  /** Throws ServletError naming why the module is unusable. */
  describe(module: Uint8Array): Promise<DescribeResult>;
  /**
   * Never hangs, and never throws for a servlet's fault: a timeout, trap, memory blow-up, failure, oversized
   * output or bad JSON comes back as `{ isError: true, content: [{ type: 'text', text: <reason> }] }`. Throws only
   * when the module cannot be loaded (the store failed, or its bytes do not match the content address).
   * `signal` stops the call (the run was cancelled): its plugin is discarded and the result is an error.
   */
  call(install: InstallRef, request: ServletCallRequest, signal?: AbortSignal): Promise<CallToolResult>;
  /** Closes every plugin; a worker plugin left open keeps the process alive. */
  close(): Promise<void>;
}

/** Compiled modules kept (by content address); compiling is cheap, but loading from the store is not. */
const MODULE_CACHE_SIZE = 64;
/** ...and at most this many bytes of modules (a module may be up to MODULE_LIMIT_BYTES). */
const MODULE_CACHE_BYTES = 256 * 1024 * 1024;

/** Throws when NETWORK_BLOCKLIST or NETWORK_ALLOWLIST has an entry it cannot read. */
export function createServletRuntime(options: { config: Config; logger: Logger }): ServletRuntime {
  const { config } = options;
  const logger = options.logger.child({ component: 'servlets' });
  const policy = parseNetworkPolicy({ blocklist: config.NETWORK_BLOCKLIST, allowlist: config.NETWORK_ALLOWLIST });
  const dispatcher = createPinnedAgent(policy, { connectTimeoutMs: config.SERVLET_CALL_TIMEOUT_MS });
  const deps: HostDeps = { config, logger, policy, dispatcher };
  /**
   * Compiled modules by content address, bounded in count and in their modules' bytes; a failed load leaves
   * (lru-cache drops a rejected fetch) and is tried again.
   */
  const modules = new LRUCache<string, { module: CompiledModule; bytes: number }, InstallRef>({
    max: MODULE_CACHE_SIZE,
    maxSize: MODULE_CACHE_BYTES,
    sizeCalculation: (compiled) => Math.max(1, compiled.bytes),
    fetchMethod: async (address, _stale, { context: install }) => {
      const bytes = await install.loadModule();
      if (contentAddress(bytes) !== address) throw new Error(`the stored module does not match its content address ${address}`);
      return { module: await compileServlet(bytes, config.SERVLET_MAX_MEMORY_MB), bytes: bytes.byteLength };
    },
  });
  /** Warm plugins per install; the pool used longest ago is retired past SERVLET_WARM_INSTALLS. */
  const pools = new LRUCache<string, { installKey: string; pool: InstancePool }>({
    max: config.SERVLET_WARM_INSTALLS,
    dispose: (found, _key, reason) => {
      if (reason !== 'set' && !closed) retire(found.pool); // close() closes them itself
    },
  });
  let closed = false;

  async function compiled(install: InstallRef): Promise<CompiledModule> {
    return (await modules.fetch(install.contentAddress, { context: install }))!.module;
  }

  function poolFor(install: InstallRef, module: CompiledModule): InstancePool {
    const key = poolKey(install);
    const found = pools.get(key);
    if (found) return found.pool;
    // a changed config, host list or module makes the install's older plugins stale
    for (const [otherKey, other] of pools.entries()) {
      if (other.installKey === install.key) pools.delete(otherKey);
    }
    const pool = new InstancePool(
      config.SERVLET_POOL_SIZE,
      () => ServletInstance.create({ module, config: install.config, domains: install.domains, deps }),
      logger,
    );
    pools.set(key, { installKey: install.key, pool });
    return pool;
  }

  /** Pools no longer used but with a call still running; close() closes them too. */
  const retiring = new Set<InstancePool>();

  function retire(pool: InstancePool): void {
    retiring.add(pool);
    void pool.retire().then(() => retiring.delete(pool));
  }

  async function call(install: InstallRef, request: ServletCallRequest, signal?: AbortSignal): Promise<CallToolResult> {
    if (closed) throw new Error('the servlet runtime is closed');
    let module: CompiledModule;
    try {
      module = await compiled(install);
    } catch (err) {
      if (!(err instanceof ServletError)) throw err;
      return fault(install, request, err.message);
    }
    const input = JSON.stringify({ params: { name: request.name, arguments: request.arguments ?? {} } });
    try {
      return await poolFor(install, module).use(async (instance) => {
        const outcome = await instance.invoke('call', input, signal);
        if (!outcome.ok) return fault(install, request, outcome.reason);
        const decoded = decodeOutput<CallToolResult>(outcome.output, 'call', config.SERVLET_MAX_RESPONSE_BYTES);
        return decoded.ok ? decoded.value : fault(install, request, `servlet ${decoded.reason}`);
      });
    } catch (err) {
      // no plugin could be started for it
      return fault(install, request, (err as Error).message);
    }
  }

  function fault(install: InstallRef, request: ServletCallRequest, reason: string): CallToolResult {
    logger.warn({ install: install.key, contentAddress: install.contentAddress, tool: request.name, reason }, 'servlet call failed');
    return toolError(reason);
  }

  return {
    describe: (module) => describeModule(module, deps),
    call,
    async close() {
      closed = true;
      const all = [...[...pools.values()].map((p) => p.pool), ...retiring].map((pool) => pool.close());
      pools.clear();
      retiring.clear();
      await Promise.all(all);
      await dispatcher.close().catch(() => dispatcher.destroy());
    },
  };
}

/** Plugins are shared only by calls with the same install, module, config and allowed hosts. */
function poolKey(install: InstallRef): string {
  const config = Object.entries(install.config).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([install.key, install.contentAddress, config, install.domains]))
    .digest('hex');
}
