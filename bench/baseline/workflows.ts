import { proxyActivities } from '@temporalio/workflow';
import type { BaselineActivities } from './activities';

const { complete } = proxyActivities<BaselineActivities>({ startToCloseTimeout: '30s' });

/** The baseline: a bare workflow whose one activity calls the same fake provider. */
export async function bareRun(prompt: string): Promise<string> {
  return complete(prompt);
}
