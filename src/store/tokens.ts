import crypto from 'node:crypto';
import { conflict } from '../errors';
import { isDuplicateKey } from './connect';
import type { Models, TokenDoc } from './models';
import { sha256 } from './secrets';

/** What a token may do (docs/tokens.md); a token has a non-empty subset, all four unless asked otherwise. */
export const TOKEN_SCOPES = ['tasks:read', 'runs:trigger', 'runs:read', 'runs:control'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** Tokens start with this; session ids (`ptr/<user>/…`) never do, so one `Authorization: Bearer` carries either. */
export const TOKEN_PREFIX = 'ptr_';
export const TOKEN_DAYS_DEFAULT = 90;
export const TOKEN_DAYS_MAX = 365;

/**
 * `last_used_at` is written at most once per this long per token (from any number of API processes): enough to
 * tell a token in use from a forgotten one, without a write per request.
 */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** 32 random bytes, base64url: 256 bits, never guessed. */
export const newToken = () => `${TOKEN_PREFIX}${crypto.randomBytes(32).toString('base64url')}`;

/**
 * Only the token's SHA-256 is stored, as for session ids. A fast unsalted hash is enough here, unlike for passwords:
 * the token is 256 random bits, so nothing short of trying 2^256 values finds it from its hash, and salt or a slow
 * hash only protect secrets people choose. A fast hash also lets every request look the token up by `_id`.
 */
export const tokenHash = (token: string) => sha256(token);

/** A token as listed: everything but the token (and its hash). */
export type TokenRecord = Pick<TokenDoc, 'name' | 'created_at' | 'expires_at'> & {
  profiles: string[] | null;
  scopes: TokenScope[];
  last_used_at: Date | null;
};

/** What a token grants: its user, profiles (null: all of them) and scopes, and until when. */
export interface TokenGrant {
  username: string;
  name: string;
  profiles: string[] | null;
  scopes: TokenScope[];
  expiresAt: number;
}

export interface NewToken {
  name: string;
  profiles: string[] | null;
  scopes: TokenScope[];
  expiresInDays: number;
}

const listed = { _id: 0, name: 1, profiles: 1, scopes: 1, created_at: 1, expires_at: 1, last_used_at: 1 } as const;

/** Makes a token; the answer is the only place the token appears. Throws 409 `token_exists` for a name in use. */
export async function createToken(models: Models, username: string, input: NewToken, now = new Date()): Promise<TokenRecord & { token: string }> {
  const token = newToken();
  const record: TokenRecord = {
    name: input.name,
    profiles: input.profiles,
    scopes: input.scopes,
    created_at: now,
    expires_at: new Date(now.getTime() + input.expiresInDays * 86_400_000),
    last_used_at: null,
  };
  try {
    await models.Token.create({ _id: tokenHash(token), username, ...record });
  } catch (err) {
    if (isDuplicateKey(err)) throw conflict(`name: a token named "${input.name}" already exists (revoke it first)`, 'token_exists');
    throw err;
  }
  return { ...record, token };
}

/** The user's tokens, oldest first, expired ones included (until revoked they keep their name). */
export async function listTokens(models: Models, username: string): Promise<TokenRecord[]> {
  return models.Token.find({ username }, listed).sort({ created_at: 1, name: 1 }).lean<TokenRecord[]>();
}

/** Revokes (deletes) the user's token of that name; false when there is none. */
export async function revokeToken(models: Models, username: string, name: string): Promise<boolean> {
  const res = await models.Token.deleteOne({ username, name });
  return res.deletedCount > 0;
}

/**
 * What the token grants, or null when no token has that value (never made, or revoked). An expired token is
 * returned as it is: callers compare `expiresAt` with the time of each request, and can say it expired.
 * Notes the use in `last_used_at` when the stored one is older than LAST_USED_RESOLUTION_MS.
 */
export async function findToken(models: Models, token: string, now = Date.now()): Promise<TokenGrant | null> {
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const _id = tokenHash(token);
  const doc = await models.Token.findById(_id).lean();
  if (!doc) return null;
  const grant: TokenGrant = {
    username: doc.username,
    name: doc.name,
    profiles: (doc.profiles as string[] | null) ?? null,
    scopes: doc.scopes as TokenScope[],
    expiresAt: doc.expires_at.getTime(),
  };
  if (grant.expiresAt > now && (!doc.last_used_at || doc.last_used_at.getTime() <= now - LAST_USED_RESOLUTION_MS)) {
    // The filter keeps concurrent lookups (other processes) from writing it again; a failed write loses one note.
    const cutoff = new Date(now - LAST_USED_RESOLUTION_MS);
    await models.Token.updateOne({ _id, $or: [{ last_used_at: null }, { last_used_at: { $lte: cutoff } }] }, { $set: { last_used_at: new Date(now) } }).catch(() => undefined);
  }
  return grant;
}
