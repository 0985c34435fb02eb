import type { Models, UserDoc } from './models';

/** A user as the API shows it: the stored document's fields, each email's given in full. */
export type UserRecord = Pick<UserDoc, 'username' | 'created_at'> & { emails: Array<{ email: string; primary: boolean; verified: boolean }> };

/** The user, or null. Users are created by the session helper (store/sessions.ts ensureUser). */
export async function findUser(models: Models, username: string): Promise<UserRecord | null> {
  const doc = await models.User.findOne({ username }).lean();
  if (!doc) return null;
  return {
    username: doc.username,
    emails: (doc.emails ?? []).map((e) => ({ email: e.email ?? '', primary: Boolean(e.primary), verified: Boolean(e.verified) })),
    created_at: doc.created_at,
  };
}
