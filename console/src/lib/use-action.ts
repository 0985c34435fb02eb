import { useState } from 'preact/hooks';
import { messageOf } from '../api/client';

/**
 * A button's request: `busy` while it runs (the buttons disable themselves), and the API's answer as `problem` when it
 * fails (shown in a role=alert), cleared when the next one starts.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const act = async (work: () => Promise<void>) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await work();
    } catch (err) {
      setProblem(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, problem, act };
}
