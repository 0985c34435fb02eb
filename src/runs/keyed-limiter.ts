/**
 * At most `limit` tasks of one key run at once in this process; the others wait, in the order they came. Keys with
 * nothing running or waiting are forgotten, so it holds only the keys in use.
 */
export function createKeyedLimiter(limit: number) {
  const keys = new Map<string, { running: number; waiting: Array<() => void> }>();
  return async function run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let state = keys.get(key);
    if (!state) keys.set(key, (state = { running: 0, waiting: [] }));
    const own = state;
    // A task that waits is handed its place by the one that ends (`running` stays as it was).
    if (own.running >= limit) await new Promise<void>((resolve) => own.waiting.push(resolve));
    else own.running++;
    try {
      return await task();
    } finally {
      const next = own.waiting.shift();
      if (next) next();
      else if (--own.running === 0) keys.delete(key);
    }
  };
}
