import type { Models } from './models';

/** FerretDB loses one of two concurrent updates of a document; a few rounds outlast any burst of them. */
const STAMP_ATTEMPTS = 5;

/**
 * Stamps these profiles' install lists as changed now. Call it once the change is stored, never before: the
 * stamp is then later than any read that missed the change, so the list's If-Modified-Since check (304 only for
 * changes stamped before the client's last answer) cannot hide it. A deleted install leaves no `modified_at`
 * behind, so this mark is what records uninstalls.
 */
export async function markInstallsChanged(models: Models, profiles: Array<{ owner: string; profile: string }>): Promise<void> {
  const seen = new Set<string>();
  for (const { owner, profile } of profiles) {
    const key = `${owner}/${profile}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const now = new Date();
    for (let attempt = 0; attempt < STAMP_ATTEMPTS; attempt++) {
      // $max: a slower request with an older clock reading never moves the mark back
      await models.Profile.updateOne({ owner, name: profile }, { $max: { installs_modified_at: now } });
      const mark = await models.Profile.findOne({ owner, name: profile }, { installs_modified_at: 1 }).lean<{ installs_modified_at?: Date | null }>();
      // a deleted profile has no list left to mark; a lost update is written again
      if (!mark || (mark.installs_modified_at && mark.installs_modified_at.getTime() >= now.getTime())) break;
    }
  }
}
