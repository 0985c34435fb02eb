import { badRequest } from '../errors';

/**
 * Keyset paging for lists ordered by `created_at` then by string fields that make the order total (e.g. profile,
 * name: unique per owner). A cursor is the sort key of the last item returned, opaque to clients (base64url JSON),
 * so a page stays correct while items are added or deleted elsewhere in the list.
 */
export interface PageRequest {
  limit: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  /** Cursor of the next page, or null on the last one. */
  next: string | null;
}

type SortKey = [number, ...string[]];

/** A cursor: any JSON value, base64url-encoded (opaque to clients). */
export const encodeCursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The value in a cursor; throws a 400 naming `cursor` when it is not one `isValid` accepts (not one this list issued). */
export function decodeCursor<T>(cursor: string, isValid: (value: unknown) => value is T): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (!isValid(value)) throw badRequest('cursor: not a cursor issued by this list');
  return value;
}

/** A keyset list's sort key: a time a Date can hold (±8.64e15 ms), then a string per tie breaker. */
const isSortKey =
  (tieBreakers: readonly string[]) =>
  (value: unknown): value is SortKey =>
    Array.isArray(value) &&
    value.length === tieBreakers.length + 1 &&
    Number.isSafeInteger(value[0]) &&
    Math.abs(value[0] as number) <= 8.64e15 &&
    value.slice(1).every((v) => typeof v === 'string');

/** The cursor of the page that starts after `item` (for a list that ends its page early). */
export const keysetCursor = (item: { created_at: Date }, tieBreakers: readonly string[]) =>
  encodeCursor([item.created_at.getTime(), ...tieBreakers.map((f) => String((item as Record<string, unknown>)[f]))]);

/** The sort key in `cursor`: its time, then a string per tie breaker; throws a 400 naming `cursor` for any other value. */
export function cursorKey(cursor: string, tieBreakers: readonly string[]): [Date, ...string[]] {
  const [ms, ...rest] = decodeCursor(cursor, isSortKey(tieBreakers));
  return [new Date(ms), ...rest];
}

/** The filter that selects items strictly after `cursor` in (created_at, ...tieBreakers) order (1 ascending, -1 descending). */
function afterCursor(cursor: string, tieBreakers: readonly string[], order: 1 | -1): Record<string, unknown> {
  const [at, ...rest] = cursorKey(cursor, tieBreakers);
  const fields: Array<[string, unknown]> = [['created_at', at], ...tieBreakers.map((f, i) => [f, rest[i]] as [string, unknown])];
  return {
    $or: fields.map((_, i) => {
      const clause: Record<string, unknown> = {};
      for (const [f, v] of fields.slice(0, i)) clause[f] = v;
      clause[fields[i]![0]] = { [order === 1 ? '$gt' : '$lt']: fields[i]![1] };
      return clause;
    }),
  };
}

/**
 * Adds the keyset clause to `filter` and gives the sort (oldest first, or newest first with `order` -1); `finish`
 * cuts one extra item off into the next cursor.
 */
export function keysetQuery(filter: Record<string, unknown>, page: PageRequest, tieBreakers: readonly string[], order: 1 | -1 = 1) {
  const where = page.cursor ? { $and: [filter, afterCursor(page.cursor, tieBreakers, order)] } : filter;
  const sort: Record<string, 1 | -1> = { created_at: order };
  for (const f of tieBreakers) sort[f] = order;
  return {
    where,
    sort,
    /** Ask for one more than the page so the last page needs no second query. */
    limit: page.limit + 1,
    finish<T extends { created_at: Date }>(docs: T[]): Page<T> {
      const items = docs.slice(0, page.limit);
      const last = items[items.length - 1];
      return { items, next: docs.length > page.limit && last ? keysetCursor(last, tieBreakers) : null };
    },
  };
}
