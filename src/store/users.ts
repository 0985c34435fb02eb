import type { Models } from './models';

export interface UserRecord {
  username: string;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
  created_at: Date;
}

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
