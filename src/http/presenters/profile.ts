import type { ProfileRecord } from '../../store/profiles';

/** A profile as the compatibility notes show it: `slug` is `<owner>/<name>`. */
export function presentProfile(profile: ProfileRecord) {
  return {
    slug: `${profile.owner}/${profile.name}`,
    description: profile.description,
    is_public: profile.is_public,
    created_at: profile.created_at.toISOString(),
    modified_at: profile.modified_at.toISOString(),
  };
}
