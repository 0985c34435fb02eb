import crypto from 'node:crypto';
import { retryWhileBusy } from './connect';
import type { Models } from './models';
import { sha256 } from './secrets';

/** How long a sign-in link can be used after it was made. */
export const SIGN_IN_LINK_TTL_MS = 10 * 60_000;

/**
 * The console's address with the token in its fragment (docs/console.md): browsers never send a fragment, so the
 * token reaches no server's or proxy's log.
 */
export const signInUrl = (publicUrl: string, token: string) => `${publicUrl.replace(/\/+$/, '')}/console#token=${token}`;

/**
 * Makes a one-time sign-in link's token for `username`: 32 random bytes, base64url. Only its SHA-256 is stored, as
 * for session ids and access tokens (256 random bits need neither salt nor a slow hash). Links past their expiry are
 * deleted on the way: FerretDB has no TTL index.
 */
export async function createSignInLink(models: Models, username: string, now = new Date()): Promise<{ token: string; expires_at: Date }> {
  const token = crypto.randomBytes(32).toString('base64url');
  const expires_at = new Date(now.getTime() + SIGN_IN_LINK_TTL_MS);
  // A filter without `_id` is a scan on FerretDB: of a collection of links at most ten minutes old.
  await models.SignInLink.deleteMany({ expires_at: { $lte: now } });
  await models.SignInLink.create({ _id: sha256(token), username, created_at: now, expires_at });
  return { token, expires_at };
}

/**
 * Uses a sign-in link: its user, or null when the token is unknown, used or expired. Single use under concurrency:
 * the link is deleted by `_id`, and only the caller whose delete removed it wins. A delete is atomic on FerretDB too
 * (one SQL `DELETE` whose row count it answers), unlike a conditional update or a findAndModify, which it applies as
 * a read and then a write, so that two callers could both see the link unused.
 */
export async function useSignInLink(models: Models, token: string, now = new Date()): Promise<{ username: string } | null> {
  const _id = sha256(token);
  const link = await models.SignInLink.findById(_id).lean();
  if (!link) return null;
  const { deletedCount } = await retryWhileBusy(() => models.SignInLink.deleteOne({ _id }));
  if (deletedCount !== 1 || link.expires_at.getTime() <= now.getTime()) return null;
  return { username: link.username };
}
