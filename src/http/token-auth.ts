import { forbidden, unauthorized } from '../errors';
import type { Models } from '../store/models';
import { findToken, tokenHash, TOKEN_PREFIX, type TokenGrant, type TokenScope } from '../store/tokens';
import { createTtlCache } from '../ttl-cache';

export type { TokenGrant, TokenScope } from '../store/tokens';

/** The access token an `Authorization` header presents (`Bearer ptr_…`); undefined for none, a session id or another scheme. */
export function presentedToken(authorization: string | undefined): string | undefined {
  const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  return bearer?.[1]?.startsWith(TOKEN_PREFIX) ? bearer[1] : undefined;
}

/**
 * Checks access tokens for one process: the API's auth middleware and the MCP server each make one with the API's
 * SESSION_CACHE_MS, so a revoked token stops working within the bound a revoked session does (docs/tokens.md).
 * Lookups are cached as sessions are (single flight, refresh ahead, failures not kept); expiry is checked on every
 * call.
 */
export function createTokenAuth(models: Models, cacheMs: number) {
  const cache = createTtlCache<TokenGrant | null>(cacheMs, { refreshAhead: true });
  return {
    /**
     * What the request's `Authorization` header grants.
     * - Resolves to null when the header presents no access token (absent, a session id, another scheme): the caller
     *   decides whether something else (a session) will do.
     * - Throws AppError 401 `unauthorized` when it presents a token that is unknown or revoked, or expired (the
     *   message says which; an expired token is otherwise treated like an unknown one).
     * - Otherwise resolves to the grant: `{ username, name, profiles (null: every profile), scopes, expiresAt }`.
     *   The caller then checks the profile and scope it needs with `requireProfile` and `requireScope`.
     * May throw what the database throws (the API maps it to 503) when the token is not cached.
     */
    async authenticateToken(authorization: string | undefined, now = Date.now()): Promise<TokenGrant | null> {
      const token = presentedToken(authorization);
      if (token === undefined) return null;
      const grant = await cache.get(tokenHash(token), () => findToken(models, token));
      if (!grant) throw unauthorized('the access token is unknown or revoked');
      if (grant.expiresAt <= now) throw unauthorized(`the access token "${grant.name}" expired at ${new Date(grant.expiresAt).toISOString()}: make a new one`);
      return grant;
    },
  };
}

export type TokenAuth = ReturnType<typeof createTokenAuth>;

/** Throws 403 `insufficient_scope`, naming the scope, when the token does not have it. */
export function requireScope(grant: Pick<TokenGrant, 'scopes'>, scope: TokenScope): void {
  if (!grant.scopes.includes(scope)) {
    throw forbidden(`scope: this access token lacks "${scope}" (it has ${grant.scopes.map((s) => `"${s}"`).join(', ')})`, 'insufficient_scope');
  }
}

export const allowsProfile = (grant: Pick<TokenGrant, 'profiles'>, profile: string) => grant.profiles === null || grant.profiles.includes(profile);

/**
 * Throws 403 `profile_not_allowed`, naming the profile, when the token is limited to other profiles of its user. The
 * answer is the same whether the profile exists or not, so it tells nothing the token's holder could not know.
 */
export function requireProfile(grant: Pick<TokenGrant, 'profiles'>, profile: string): void {
  if (!allowsProfile(grant, profile)) {
    throw forbidden(`profile: this access token is not for profile "${profile}" (it is for ${grant.profiles!.map((p) => `"${p}"`).join(', ')})`, 'profile_not_allowed');
  }
}
