import type { BrowserContext } from 'playwright-core';

export interface ScriptProbe {
  /** The global function page scripts call: `<name>('label')`. */
  readonly name: string;
  /** The labels of the calls so far, in the order the pages made them. */
  readonly calls: readonly string[];
  /** Resolves once a page called `<name>(label)`; rejects, listing the calls, when none did by the deadline. */
  waitFor(label: string, timeoutMs?: number): Promise<void>;
}

/**
 * Tells whether scripts ran in the pages of `context`: each page gets a global function `name` (before any of its own
 * scripts) that records the label it is called with. A test puts calls to it in what must not run (an inline script
 * under a CSP, an `onerror` in a model's answer) and in a script that must run after it (the page's own), waits for
 * the latter, then reads `calls`: calls reach the test in the order the page made them, so a script that ran before
 * is in the list by then.
 */
export async function scriptProbe(context: BrowserContext, name = 'ptrProbe'): Promise<ScriptProbe> {
  const calls: string[] = [];
  const waiting = new Set<() => void>();
  await context.exposeBinding(name, (_source, label: unknown) => {
    calls.push(String(label));
    for (const wake of waiting) wake();
  });
  const waitFor = (label: string, timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!calls.includes(label)) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no page called ${name}('${label}') within ${timeoutMs} ms; the calls: [${calls.join(', ')}]`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiting.delete(check);
      };
      waiting.add(check);
      check();
    });
  return { name, calls, waitFor };
}
