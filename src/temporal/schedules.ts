import type { Logger } from '../logger';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleOptionsStartWorkflowAction, type Workflow } from '@temporalio/client';

/**
 * Makes sure a Schedule that starts `workflowType` every `everyMs` on `taskQueue` exists with these settings (one at
 * a time; a pass that could not start is skipped, the next one covers it). Every worker calls it at start: creating
 * it twice is harmless, and an existing one gets the current interval, arguments and policies.
 */
export async function ensureSchedule<W extends Workflow>(
  client: Client,
  options: { scheduleId: string; workflowType: W | string; taskQueue: string; args: Parameters<W>; everyMs: number },
): Promise<void> {
  const { scheduleId, everyMs } = options;
  const spec = { intervals: [{ every: everyMs }] };
  // The SDK's type ties `taskQueue` to the arguments' shape in a way a generic W cannot satisfy.
  const action = {
    type: 'startWorkflow',
    workflowType: options.workflowType,
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: options.args,
    // A pass that cannot run (no worker) is not worth keeping: the next one covers it.
    workflowExecutionTimeout: Math.max(60_000, everyMs * 2),
  } as ScheduleOptionsStartWorkflowAction<W>;
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, everyMs) };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action, policies: { ...previous.policies, ...policies } }));
  }
}

/** Deletes a Schedule if it exists. */
export async function removeSchedule(client: Client, scheduleId: string): Promise<void> {
  await client.schedule
    .getHandle(scheduleId)
    .delete()
    .catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
}

/**
 * Makes sure the housekeeping Schedules exist without letting them stop a worker from starting: a Temporal server
 * under load can fail a describe or an update, and a worker that exits for that (as one did in a test, restarted
 * beside a full suite) takes runs down with it. Tries `timing.tries` times (1 s, then 2 s apart) before `settled`
 * resolves (so a worker that starts normally has its Schedules); after that it keeps trying in the background every
 * `timing.retryMs`, logging each failure, until it succeeds or `stop()`.
 */
export function keepSchedules(ensure: () => Promise<unknown>, logger: Logger, timing = { tries: 3, firstDelayMs: 1_000, retryMs: 30_000 }): { settled: Promise<void>; stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const wait = (ms: number) => new Promise<void>((resolve) => { timer = setTimeout(resolve, ms); timer.unref(); });
  const attempt = async (n: number): Promise<boolean> => {
    try {
      await ensure();
      return true;
    } catch (err) {
      logger.warn({ err, attempt: n }, 'could not make sure the housekeeping Schedules exist; trying again');
      return false;
    }
  };
  const settled = (async () => {
    for (let n = 1; n <= timing.tries && !stopped; n++) {
      if (await attempt(n)) return;
      if (n < timing.tries) await wait(timing.firstDelayMs * n);
    }
    void (async () => {
      for (let n = timing.tries + 1; !stopped; n++) {
        await wait(timing.retryMs);
        if (stopped || (await attempt(n))) return;
      }
    })();
  })();
  return { settled, stop: () => { stopped = true; clearTimeout(timer); } };
}
