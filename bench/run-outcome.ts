import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { runTask } from '../workflows/run-task';
import type { PartDeps } from './stack';

/** `waitForRun`'s answer for a run whose workflow returned `closedElsewhere`: the model call's end closed its record. */
export const ELSEWHERE = 'elsewhere';

/**
 * Waits until the run's workflow has closed: undefined when it returned `ready`, ELSEWHERE when it left the end to
 * the record (whose status only the API can tell: `recordNotReady`), otherwise why the run is not ready.
 */
export async function waitForRun(client: Client, workflowId: string): Promise<string | undefined> {
  const outcome = await resultOnceStarted(client, workflowId);
  if (outcome.closedElsewhere) return ELSEWHERE;
  return outcome.status === 'ready' ? undefined : `${workflowId}: the workflow returned ${JSON.stringify(outcome)}`;
}

/** How often a run waiting for its start (STARTED_RUNS_PER_USER: no workflow yet) is asked again, and for how long. */
const WAITING_POLL_MS = 250;
const WAITING_MAX_MS = 30 * 60_000;

/** The workflow's result; a run still waiting for its start (src/runs/admission.ts) has none yet, so it is asked again. */
async function resultOnceStarted(client: Client, workflowId: string) {
  const until = Date.now() + WAITING_MAX_MS;
  for (;;) {
    try {
      return await client.workflow.getHandle<typeof runTask>(workflowId).result();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) || Date.now() > until) throw err;
      await sleep(WAITING_POLL_MS);
    }
  }
}

/** Reads the run's record through the API (`/api/runs/<owner>/<profile>/<task>/<run>`): undefined when ready, otherwise why not. */
export async function recordNotReady(api: PartDeps['api'], runPath: string): Promise<string | undefined> {
  const res = await api(runPath);
  const record = await res.text();
  const status = res.status === 200 ? (JSON.parse(record) as { status?: string }).status : undefined;
  return status === 'ready' ? undefined : `${runPath}: its workflow left its end to the record, which answered ${res.status} ${record.slice(0, 300)}`;
}
