import crypto from 'node:crypto';
import { isDuplicateKey } from './connect';
import type { Models } from './models';
import { sha256 } from './secrets';

/** Session ids look like the hosted service's: `ptr/<username>/<token>`; only their sha256 is stored. */
export function newSessionId(username: string): string {
  return `ptr/${username}/${crypto.randomBytes(32).toString('base64url')}`;
}

/** What identifies a session where its id must not be shown (lists, `revoke --id`): the id's last 6 characters. */
export const sessionHint = (id: string) => id.slice(-6);

export async function ensureUser(models: Models, username: string, now = new Date()) {
  await models.User.updateOne(
    { username },
    { $setOnInsert: { username, emails: [], created_at: now } },
    { upsert: true },
  ).catch((err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
  });
  await models.Profile.updateOne(
    { owner: username, name: 'default' },
    { $setOnInsert: { owner: username, name: 'default', description: '', is_public: false, created_at: now, modified_at: now } },
    { upsert: true },
  ).catch((err: unknown) => {
    if (!isDuplicateKey(err)) throw err;
  });
}

export async function createSession(models: Models, username: string, ttlHours: number, now = new Date()) {
  await ensureUser(models, username, now);
  const id = newSessionId(username);
  const expires_at = new Date(now.getTime() + ttlHours * 3600_000);
  const hash = sha256(id);
  await models.Session.create({ _id: hash, hash, hint: sessionHint(id), username, created_at: now, expires_at });
  return { id, expires_at };
}

export interface SessionLookup {
  username: string;
  expiresAt: number;
}

/** The session's user, or null when the id is unknown, expired or revoked. */
export async function findSession(models: Models, id: string, now = Date.now()): Promise<SessionLookup | null> {
  const doc = await models.Session.findById(sha256(id)).lean();
  if (!doc || doc.revoked_at || doc.expires_at.getTime() <= now) return null;
  return { username: doc.username, expiresAt: doc.expires_at.getTime() };
}

export async function listSessions(models: Models, username: string) {
  return models.Session.find({ username }).sort({ created_at: 1 }).lean();
}

/**
 * Revokes the session whose id ends with `hint` (as listed), exactly the session `id` (by its hash, not every session
 * sharing its hint), or every session of the user with `all`. Returns how many it revoked.
 */
export async function revokeSessions(models: Models, username: string, which: { hint?: string; id?: string; all?: boolean }) {
  const filter = which.all ? { username, revoked_at: null } : which.id !== undefined ? { username, hash: sha256(which.id), revoked_at: null } : { username, hint: which.hint, revoked_at: null };
  const res = await models.Session.updateMany(filter, { $set: { revoked_at: new Date() } });
  return res.modifiedCount;
}
