import { z } from 'zod';
import type { ProfileRecord } from '../../store/profiles';
import { timestamp } from './timestamp';

/** A profile as every read shows it (the OpenAPI document's `Profile`). */
export const profileView = z
  .object({
    slug: z.string().meta({ description: '`<user>/<name>`' }),
    description: z.string(),
    is_public: z.boolean(),
    created_at: timestamp,
    modified_at: timestamp,
  })
  .meta({ id: 'Profile' });
export type ProfileView = z.infer<typeof profileView>;

/** A profile as the compatibility notes show it: `slug` is `<owner>/<name>`. */
export function presentProfile(profile: ProfileRecord): ProfileView {
  return {
    slug: `${profile.owner}/${profile.name}`,
    description: profile.description,
    is_public: profile.is_public,
    created_at: profile.created_at.toISOString(),
    modified_at: profile.modified_at.toISOString(),
  };
}
