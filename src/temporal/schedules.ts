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
