import { z } from 'zod';

/** `POST /api/mcp/sse/url` as the Python client's `Client.mcp_sse()` sends it; unknown fields are ignored. */
export const sseUrlBody = z.object({
  version: z.string().max(20).optional(),
  /** A profile slug: `<user>/<profile>`, `~/<profile>` or `<profile>`. */
  activeProfile: z.string().min(1).max(200).optional(),
  expiresIn: z.number().nonnegative().optional(),
});
export type SseUrlBody = z.infer<typeof sseUrlBody>;
