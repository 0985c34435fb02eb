import type { Context } from 'koa';
import type { Models } from '../store/models';
import { sessionAuthenticator } from '../http/middleware/auth';
import { createTokenAuth } from '../http/token-auth';
import { AppError } from '../errors';

/** What a request to `/mcp/…` may do: its user, and when its credential says so, the profiles and scopes it is limited to. */
export interface McpPrincipal {
  username: string;
  /** Absent: every profile of the user. */
  profiles?: string[];
  /** Absent: every scope. */
  scopes?: string[];
}

/** The scopes each part of the server needs (access tokens carry them; a session has them all). */
export const SCOPES = { listTools: 'tasks:read', call: 'runs:trigger', read: 'runs:read', control: 'runs:control' } as const;

/**
 * Authenticates a request to `/mcp/…`: its principal, or null when it presents no valid credential. An access token
 * (`Authorization: Bearer ptr_…`, docs/tokens.md) with its profiles and scopes, else a session
 * (`Authorization: Bearer <session id>`) with every profile and scope. Both are cached for `cacheMs`: a revoked
 * one stops working within it.
 */
export function mcpAuthenticator(models: Models, cacheMs: number): (ctx: Context) => Promise<McpPrincipal | null> {
  const session = sessionAuthenticator(models, cacheMs);
  const tokens = createTokenAuth(models, cacheMs);
  return async (ctx) => {
    try {
      const grant = await tokens.authenticateToken(ctx.get('authorization'));
      if (grant) return { username: grant.username, profiles: grant.profiles ?? undefined, scopes: grant.scopes };
    } catch (err) {
      // An unknown, revoked or expired token: no valid credential.
      if (err instanceof AppError && err.status === 401) return null;
      throw err;
    }
    return (await session(ctx)) ?? null;
  };
}

export const allows = (principal: McpPrincipal, scope: string) => !principal.scopes || principal.scopes.includes(scope);
export const allowsProfile = (principal: McpPrincipal, profile: string) => !principal.profiles || principal.profiles.includes(profile);
