import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from '../api/client';

export interface Loaded<T> {
  data?: T;
  error?: string;
  loading: boolean;
  reload: () => void;
}

/**
 * Calls `load` when `deps` change (and on `reload`), keeping the last data while a reload runs. With `everyMs`, again
 * every so often while the page is visible, for lists that change by themselves.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (err: unknown) => mine === generation.current && setState((s) => ({ data: s.data, error: messageOf(err), loading: false })),
    );
  }, deps);
  useEffect(() => {
    run();
    if (!everyMs) return undefined;
    const timer = setInterval(() => document.visibilityState === 'visible' && run(), everyMs);
    return () => clearInterval(timer);
  }, [run, everyMs]);
  return { ...state, reload: run };
}
