import type { Context } from 'koa';
import { z } from 'zod';
import type { Page, PageRequest } from '../../store/keyset';
import { parse } from '../validate';

/**
 * Task and profile lists default to 1000 items, not the 100 of run lists: the Python client iterates one answer
 * and never follows `Link`, so a smaller page would hide a user's tasks from it.
 */
export const LIST_DEFAULT_LIMIT = 1000;
export const LIST_MAX_LIMIT = 1000;

/** Run lists page by 100 unless asked otherwise (as the compatibility notes have it). */
export const RUN_LIST_DEFAULT_LIMIT = 100;

/** `?limit=&cursor=` of a list whose pages hold `defaultLimit` items unless asked otherwise. */
export const pageQuery = (defaultLimit: number) =>
  z.object({
    limit: z.coerce.number().int().min(1).max(LIST_MAX_LIMIT).default(defaultLimit).meta({ description: `Items per page, 1 to ${LIST_MAX_LIMIT}` }),
    cursor: z.string().min(1).max(1000).optional().meta({ description: 'From the `Link: <...>; rel="next"` of the page before' }),
  });
const pageQueries = new Map<number, ReturnType<typeof pageQuery>>();

/** `?limit=&cursor=`; a bad value is a 400 naming `query.limit` or `query.cursor`. */
export function pageRequest(ctx: Context, defaultLimit = LIST_DEFAULT_LIMIT): PageRequest {
  let schema = pageQueries.get(defaultLimit);
  if (!schema) pageQueries.set(defaultLimit, (schema = pageQuery(defaultLimit)));
  const q = ctx.query;
  return parse(schema, { limit: q.limit, cursor: q.cursor }, 'query');
}

/** Answers a bare JSON array (the client iterates it); the next page's URL goes in `Link: <...>; rel="next"`. */
export function sendPage<T, V>(ctx: Context, page: Page<T>, present: (item: T) => V) {
  setNextLink(ctx, page.next);
  ctx.body = page.items.map(present);
}

/** A page whose items are already JSON text (rendered once, perhaps cached): the array is joined, not re-encoded. */
export function sendRenderedPage(ctx: Context, page: Page<string>) {
  setNextLink(ctx, page.next);
  ctx.type = 'application/json';
  ctx.body = `[${page.items.join(',')}]`;
}

/** Sets `Link: <...>; rel="next"` for a page that has a next one. */
export function setNextLink(ctx: Context, next: string | null) {
  if (!next) return;
  // A relative reference (RFC 8288 allows it): nothing taken from the Host header, which a client controls.
  const query = new URLSearchParams(ctx.querystring);
  query.set('cursor', next);
  ctx.set('Link', `<${ctx.path}?${query.toString()}>; rel="next"`);
}
