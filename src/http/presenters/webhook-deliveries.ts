import { z } from 'zod';
import type { listDeliveries } from '../../store/webhooks';
import type { Expect, Same } from './same-type';
import { timestamp } from './timestamp';

const deliveryView = z.object({
  run: z.string(),
  attempt: z.number().int().positive(),
  status: z.union([z.number().int(), z.enum(['refused', 'failed'])]).meta({ description: 'The receiver’s HTTP status, or `refused` / `failed`' }),
  error: z.string().optional(),
  at: timestamp,
});

/** `GET <task path>/webhook/deliveries`: `{"deliveries": [...]}`, newest first (the OpenAPI document's `WebhookDeliveries`). */
export const deliveriesView = z.object({ deliveries: z.array(deliveryView) }).meta({ id: 'WebhookDeliveries' });

// The list is presented by the store (store/webhooks.ts `listDeliveries`): the view says the same.
type _DeliveriesAreTheStores = Expect<Same<z.infer<typeof deliveryView>, Awaited<ReturnType<typeof listDeliveries>>[number]>>;
