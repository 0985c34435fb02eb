import crypto from 'node:crypto';
import type { Models } from './models';

/**
 * Signed trigger URLs: the credential for triggering one task. The signature is an HMAC-SHA256 over
 * (owner, profile, task, the task's _id, url id, issued-at, expiry) with the server's signing secret, so an URL
 * dies with its task (a task re-created under the same name has another _id), at its expiry, when its id is
 * revoked, or when every URL of the task issued up to a moment is revoked. Revocations are documents of their own
 * (revoked_urls), never an update of the task: FerretDB would lose one of two concurrent updates of a document.
 */
export interface SignedUrlParts {
  owner: string;
  profile: string;
  task: string;
  id: string;
  iat: number;
  exp: number;
  sig: string;
}

/**
 * A signed URL's `iat` (issued at) and `exp` (expiry) as its query holds them: milliseconds since the epoch, both.
 * URLs issued before 2026-11-27 hold `exp` in seconds; they keep working (expiryMs).
 */
export const IAT_PATTERN = /^\d{1,15}$/;
export const EXP_PATTERN = /^\d{1,15}$/;

/** Below this an `exp` is in seconds (an older URL's): as milliseconds it would be a time in 1973. */
const SECONDS_BELOW = 1e11;

/** When the URL expires, in milliseconds since the epoch, whichever unit its `exp` is in. */
export const expiryMs = (parts: Pick<SignedUrlParts, 'exp'>) => (parts.exp < SECONDS_BELOW ? parts.exp * 1000 : parts.exp);

export const signedPath = (owner: string, profile: string, task: string) => `/signed/tasks/${owner}/${profile}/${task}`;

const mac = (secret: string, p: Omit<SignedUrlParts, 'sig'>, taskId: string) =>
  crypto.createHmac('sha256', secret).update([p.owner, p.profile, p.task, taskId, p.id, p.iat, p.exp].join('\n')).digest('base64url');

export function signTaskUrl(
  opts: { secret: string; publicUrl: string; ttlDays: number },
  task: { _id: { toString(): string }; owner: string; profile: string; name: string },
  now = Date.now(),
): string {
  const parts = {
    owner: task.owner,
    profile: task.profile,
    task: task.name,
    id: crypto.randomBytes(12).toString('base64url'),
    iat: now,
    exp: now + opts.ttlDays * 86_400_000,
  };
  const sig = mac(opts.secret, parts, task._id.toString());
  return `${opts.publicUrl}${signedPath(task.owner, task.profile, task.name)}?id=${parts.id}&iat=${parts.iat}&exp=${parts.exp}&sig=${sig}`;
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** Parses the parts of a signed URL (absolute, or a path with its query); undefined when it is not one. */
export function parseSignedUrl(url: string): SignedUrlParts | undefined {
  let u: URL;
  try {
    u = new URL(url, 'http://x');
  } catch {
    return undefined;
  }
  const m = /^\/signed\/tasks\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(u.pathname);
  const q = u.searchParams;
  const [id, iat, exp, sig] = ['id', 'iat', 'exp', 'sig'].map((k) => q.get(k) ?? '');
  if (!m || !id || !IAT_PATTERN.test(iat!) || !EXP_PATTERN.test(exp!) || !sig) return undefined;
  // A path segment that is not valid percent-encoding names no task: not a signed URL.
  const [owner, profile, task] = [m[1]!, m[2]!, m[3]!].map(decodeSegment);
  if (owner === undefined || profile === undefined || task === undefined) return undefined;
  return { owner, profile, task, id: id!, iat: Number(iat), exp: Number(exp), sig: sig! };
}

export type Verdict = { ok: true } | { ok: false; code: 'signed_url_invalid' | 'signed_url_expired' | 'signed_url_revoked'; message: string };

/** Reads one revocation document by its _id (`<url id>` or `task:<task _id>`). */
export type RevocationLookup = (id: string) => PromiseLike<{ revoked_at: Date } | null>;

export const revocationLookup =
  (models: Models): RevocationLookup =>
  (id) =>
    models.RevokedUrl.findById(id).lean();

/** Whether the URL was signed here for this very task (its names and _id): constant-time comparison. */
export function signatureValid(secret: string, parts: SignedUrlParts, task: { _id: { toString(): string } }): boolean {
  const expected = Buffer.from(mac(secret, parts, task._id.toString()));
  const given = Buffer.from(parts.sig);
  return expected.length === given.length && crypto.timingSafeEqual(expected, given);
}

/** Checks a signed URL against its task: signature, expiry, revocations. */
export async function verifySignedUrl(
  revoked: RevocationLookup,
  secret: string,
  parts: SignedUrlParts,
  task: { _id: { toString(): string } } | null,
  now = Date.now(),
): Promise<Verdict> {
  if (!task || !signatureValid(secret, parts, task)) return { ok: false, code: 'signed_url_invalid', message: 'the signed URL is not valid' };
  if (expiryMs(parts) <= now) return { ok: false, code: 'signed_url_expired', message: 'the signed URL has expired' };
  const [one, all] = await Promise.all([revoked(parts.id), revoked(`task:${task._id}`)]);
  if (one || (all && parts.iat <= all.revoked_at.getTime())) {
    return { ok: false, code: 'signed_url_revoked', message: 'the signed URL was revoked' };
  }
  return { ok: true };
}

export async function revokeUrl(models: Models, taskId: { toString(): string }, urlId: string): Promise<void> {
  await models.RevokedUrl.updateOne({ _id: urlId }, { $setOnInsert: { task_id: taskId, revoked_at: new Date() } }, { upsert: true });
}

/** Every URL of the task issued up to now stops working (URLs issued later work). */
export async function revokeAllUrls(models: Models, taskId: { toString(): string }): Promise<void> {
  await models.RevokedUrl.updateOne({ _id: `task:${taskId}` }, { $set: { task_id: taskId, revoked_at: new Date() } }, { upsert: true });
}
