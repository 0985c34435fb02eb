import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api';

/**
 * The active span follows the async calls that continue it (as @opentelemetry/context-async-hooks' manager of the same
 * name does, which this project does not depend on): an activity's provider and tool call spans are children of the
 * activity's span, the API's workflow start a child of its request's.
 */
export class AsyncLocalStorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const cb = thisArg === undefined ? fn : fn.bind(thisArg);
    return this.storage.run(context, cb as never, ...args) as ReturnType<F>;
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    const inContext = (call: () => unknown) => this.storage.run(context, call);
    return function (this: unknown, ...args: unknown[]) {
      return inContext(() => fn.apply(this, args));
    } as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}
