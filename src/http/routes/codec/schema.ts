import { z } from 'zod';

/** Payloads per request: the Web UI and the CLI send one event's (or one answer's) payloads at a time. */
export const MAX_PAYLOADS = 1000;

const base64 = z.base64({ error: 'expected base64' });

/**
 * A Temporal `Payload` in protobuf JSON: metadata values and data are base64 (data is absent when empty, as for
 * `binary/null`). Other fields pass through as sent.
 */
export const payloadSchema = z.looseObject({
  metadata: z.record(z.string(), base64).nullish(),
  data: base64.nullish(),
});
export type Payload = z.infer<typeof payloadSchema>;

/** `POST <codec endpoint>/decode` and `/encode`: a `Payloads` message in protobuf JSON. */
export const codecBody = z.object({
  payloads: z.array(payloadSchema).max(MAX_PAYLOADS, { error: `at most ${MAX_PAYLOADS} payloads per request` }),
});
export type CodecBody = z.infer<typeof codecBody>;
