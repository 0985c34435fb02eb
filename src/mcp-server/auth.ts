import type { Context } from 'koa';
import type { Models } from '../store/models';
import { sessionAuthenticator } from '../http/middleware/auth';

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
 * Authenticates a request to `/mcp/…`: its principal, or null when it presents no valid credential. Today a session
 * (`Authorization: Bearer <session id>`); access tokens (`ptr_…`) replace this one function.
 */
export function mcpAuthenticator(models: Models, cacheMs: number): (ctx: Context) => Promise<McpPrincipal | null> {
  const session = sessionAuthenticator(models, cacheMs);
  return async (ctx) => (await session(ctx)) ?? null;
}

export const allows = (principal: McpPrincipal, scope: string) => !principal.scopes || principal.scopes.includes(scope);
export const allowsProfile = (principal: McpPrincipal, profile: string) => !principal.profiles || principal.profiles.includes(profile);
