import { z } from 'zod';
import { nameSchema } from '../../../store/names';

export const DESCRIPTION_MAX_LENGTH = 1000;

export const profileParams = z.object({ profile: nameSchema });

/** `POST /api/profiles/~/<name>`; unknown fields are ignored. */
export const createProfileBody = z.object({
  description: z.string().max(DESCRIPTION_MAX_LENGTH).default(''),
  is_public: z.boolean().default(false),
});
export type CreateProfileBody = z.infer<typeof createProfileBody>;
