import { z } from 'zod';
import { nameSchema } from '../../../store/names';

/** Variant A trigger body: trigger data is a flat map of string to string. */
export const variantATrigger = z.object({
  parameters: z.record(z.string(), z.string({ error: 'expected a string (Variant A takes a flat map of string to string)' })).default({}),
});
export type VariantATrigger = z.infer<typeof variantATrigger>;

/** The `run-id` header of a signed trigger. */
export const runIdHeader = nameSchema.optional();

export const runName = nameSchema;

export const revokeBody = z.object({ url: z.string().min(1).max(4000) });
