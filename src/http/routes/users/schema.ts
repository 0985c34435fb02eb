import { z } from 'zod';

/** `GET /api/users/~`: the client reads `username` to recognise its own profiles and tasks. */
export const userView = z.object({
  username: z.string(),
  emails: z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() })),
});
export type UserView = z.infer<typeof userView>;
