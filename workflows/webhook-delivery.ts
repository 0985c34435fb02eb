import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhook-delivery';
import type { WebhookDeliveryInput, WebhookOutcome } from '../src/contract/messages';

/**
 * Delivery attempts: every failure but a refused destination is retried, waits doubling from `initialMs` up to an
 * hour, until `hours` after the first attempt. One attempt is one POST, bounded in the activity (15 s); this bound
 * only catches a lost worker.
 */
const deliveryOptions = (retry: WebhookDeliveryInput['retry']) =>
  ({
    startToCloseTimeout: '1m',
    scheduleToCloseTimeout: Math.max(1, Math.round(retry.hours * 3_600_000)),
    retry: { initialInterval: retry.initialMs, backoffCoefficient: 2, maximumInterval: '1h' },
  }) as const;

/**
 * One run's completion webhook: started when the run closes (src/runs/announce.ts), apart from the run's own
 * workflow. History holds the run's id and creation time only: the activity reads the run, the task's webhook and its
 * secret from the store at every attempt. Delivers once, retrying; ends `delivered: false` (not failed) when it gives
 * up: the deliveries list says why.
 */
export async function deliverWebhook(input: WebhookDeliveryInput): Promise<WebhookOutcome> {
  const { postRunClosed } = proxyActivities<WebhookActivities>(deliveryOptions(input.retry));
  try {
    return await postRunClosed({ runId: input.runId, createdAt: input.createdAt });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause;
    const reason = cause instanceof ApplicationFailure ? cause.message : `gave up after ${input.retry.hours} h of attempts`;
    return { delivered: false, reason };
  }
}
