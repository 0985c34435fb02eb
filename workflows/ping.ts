import { proxyLocalActivities } from '@temporalio/workflow';
import type { HealthActivities } from '../activities/health';

const { echo } = proxyLocalActivities<HealthActivities>({ startToCloseTimeout: '5s' });

/** Health check: proves a worker is polling the task queue and can run a local activity. */
export async function ping(input: { text: string }): Promise<string> {
  return echo({ text: input.text });
}
