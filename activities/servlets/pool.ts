import type { Logger } from '../../src/logger';
import { rejectionText } from './errors';
import type { ServletInstance } from './host';

interface Waiter {
  resolve(instance: ServletInstance): void;
  reject(err: Error): void;
}

/**
 * Warm plugins for one install (one module, config and set of allowed hosts). At most `size` plugins exist, each
 * serving one call at a time; further callers wait their turn. A plugin that timed out, crashed or was closed
 * comes back unhealthy and is closed and replaced; a healthy one is reset and kept.
 */
export class InstancePool {
  #idle: ServletInstance[] = [];
  #waiters: Waiter[] = [];
  /** Plugins alive or being created: idle + busy + starting. */
  #count = 0;
  #busy = new Set<ServletInstance>();
  #discarded = new WeakSet<ServletInstance>();
  #closing = new Set<Promise<void>>();
  #retired = false;
  #drained: Promise<void> | undefined;
  #onDrained: (() => void) | undefined;
  #closed = false;

  constructor(
    private readonly size: number,
    private readonly create: () => Promise<ServletInstance>,
    private readonly logger: Logger,
  ) {}

  /** Runs `fn` on a plugin of its own. Rejects only when no plugin could be started (or the pool is closed). */
  async use<T>(fn: (instance: ServletInstance) => Promise<T>): Promise<T> {
    const instance = await this.#acquire();
    this.#busy.add(instance);
    try {
      return await fn(instance);
    } finally {
      this.#busy.delete(instance);
      // the caller has its answer; resetting the plugin happens off its path
      void this.#release(instance);
    }
  }

  /**
   * Keeps no plugin warm from now on: idle ones close now, busy ones when their call ends. Resolves once every
   * plugin is closed.
   */
  retire(): Promise<void> {
    this.#retired = true;
    for (const instance of this.#idle.splice(0)) this.#discard(instance);
    this.#drained ??= new Promise<void>((resolve) => (this.#onDrained = resolve));
    this.#checkDrained();
    return this.#drained;
  }

  /** Closes every plugin, busy ones included (their calls end as "shutting down"), and waits for them. */
  async close(): Promise<void> {
    this.#closed = true;
    const drained = this.retire();
    for (const waiter of this.#waiters.splice(0)) waiter.reject(new Error('servlet runtime is shutting down'));
    for (const instance of this.#busy) this.#discard(instance);
    await drained;
  }

  get idle(): number {
    return this.#idle.length;
  }

  async #acquire(): Promise<ServletInstance> {
    if (this.#closed) throw new Error('servlet runtime is shutting down');
    const idle = this.#idle.pop();
    if (idle) return idle;
    if (this.#count < this.size) return this.#start();
    return new Promise<ServletInstance>((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  async #start(): Promise<ServletInstance> {
    this.#count++;
    let instance: ServletInstance;
    try {
      instance = await this.create();
    } catch (err) {
      this.#count--;
      this.#checkDrained();
      throw err;
    }
    if (this.#closed) {
      this.#discard(instance);
      throw new Error('servlet runtime is shutting down');
    }
    return instance;
  }

  async #release(instance: ServletInstance): Promise<void> {
    if (instance.healthy && !this.#closed) await instance.recycle();
    if (!instance.healthy || this.#closed) {
      this.#discard(instance);
      this.#serveWaiterWithNewInstance();
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve(instance);
    else if (this.#retired) this.#discard(instance);
    else this.#idle.push(instance);
  }

  #serveWaiterWithNewInstance(): void {
    const waiter = this.#waiters.shift();
    if (!waiter) return;
    this.#start().then(waiter.resolve, (err: Error) => waiter.reject(err));
  }

  #discard(instance: ServletInstance): void {
    if (this.#discarded.has(instance)) return;
    this.#discarded.add(instance);
    this.#count--;
    const closing = instance
      .close()
      .catch((err: unknown) => this.logger.warn({ err: rejectionText(err) }, 'closing a servlet plugin failed'))
      .finally(() => {
        this.#closing.delete(closing);
        this.#checkDrained();
      });
    this.#closing.add(closing);
  }

  #checkDrained(): void {
    if (this.#retired && this.#count === 0 && this.#closing.size === 0) this.#onDrained?.();
  }
}
