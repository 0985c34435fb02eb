import { CancellationScope, isCancellation, proxyActivities, setHandler } from '@temporalio/workflow';
import type { EvalActivities } from '../activities/evals';
import { evalCancelSignal, type EvalInput } from '../src/contract/messages';
import { EVAL_AWAIT, EVAL_STEP } from './limits';

/**
 * An eval (docs/evals.md): makes its replays, at most `concurrency` live at once, waits for each to end, then scores
 * them. Cancelled (its signal, or Temporal's cancel), it starts no more, cancels those not ended and ends `cancelled`.
 * Durable as a run is: a worker lost mid-eval repeats no replay (each is made by name, idempotently).
 */
export async function runEval(input: EvalInput): Promise<string> {
  const steps = proxyActivities<EvalActivities>(EVAL_STEP);
  const { awaitEvalReplay } = proxyActivities<EvalActivities>(EVAL_AWAIT);
  const { evalId } = input;
  const replays = new CancellationScope();
  let cancelledBy: string | undefined;
  setHandler(evalCancelSignal, ({ by }) => {
    cancelledBy ??= by;
    replays.cancel();
  });

  try {
    await steps.markEvalRunning({ evalId });
    let next = 0;
    const lane = async () => {
      while (next < input.items && cancelledBy === undefined) {
        const index = next++;
        const started = await steps.startEvalReplay({ evalId, index });
        if (started) await awaitEvalReplay({ runId: started.runId });
      }
    };
    if (cancelledBy === undefined) await replays.run(() => Promise.all(Array.from({ length: Math.min(input.concurrency, input.items) }, lane)));
  } catch (err) {
    if (!isCancellation(err)) {
      await CancellationScope.nonCancellable(() => steps.endEval({ evalId, status: 'error', reason: `the eval failed: ${(err as Error).message}` }));
      throw err;
    }
    cancelledBy ??= 'Temporal';
  }
  if (cancelledBy !== undefined) {
    const by = cancelledBy;
    await CancellationScope.nonCancellable(async () => {
      await steps.cancelEvalReplays({ evalId, by });
      await steps.endEval({ evalId, status: 'cancelled', reason: `cancelled by ${by}` });
    });
    return 'cancelled';
  }
  await steps.scoreEval({ evalId });
  return 'ready';
}
