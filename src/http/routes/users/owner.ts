import type { Context } from 'koa';
import { notFound } from '../../../errors';

/**
 * The user a path names: `~` and the session's own username both mean the session user. Any other name is a 404
 * worded like a missing thing, so a path never tells whether another user or their resources exist.
 */
export function ownerFromPath(ctx: Context, user: string | undefined, what: string): string {
  const me = ctx.state.username as string;
  if (user === '~' || user === me) return me;
  throw notFound(what);
}
