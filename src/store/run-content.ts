import type { ContentRef, HeldEntry, ResultEntry, Text } from '../../workflows/types';
import { retryWhileBusy } from './connect';
import type { Models } from './models';

/**
 * A run's contents besides its record, each document bounded whatever the run:
 * - entries and conversation messages in pages of PAGE_SIZE: page 0 in the run record (`results`, `messages`),
 *   pages 1.. in `run_pages` (`<run>#p<n>`, fields `e` and `m`: index within the page → item);
 * - texts larger than the inline limit in `run_blobs`, in parts of PART_CHARS (`<run>#<key>@<part>`).
 * Every document is found by `_id` (FerretDB pushes down nothing else) and carries `run` so it goes with its run.
 * Items are written at fixed indices with `$set`, so writing one again (a retried activity) changes nothing.
 */
export const PAGE_SIZE = 32;
/** Characters per blob part: at most 3 bytes each in UTF-8, so a part stays under a MiB. */
const PART_CHARS = 256 * 1024;

export type PagedKind = 'e' | 'm';

export const pageId = (run: string, page: number) => `${run}#p${page}`;
const partId = (ref: string, part: number) => `${ref}@${part}`;
export const isRef = (text: Text): text is ContentRef => typeof text !== 'string';

/** A run's stored content is not there: its run was deleted meanwhile (a reader sees the record first). */
export class StoredContentMissing extends Error {
  override name = 'StoredContentMissing';
}

/** Stores `text` under `<run>#<key>` when it is larger than `inlineBytes`; returns it inline or as a reference. */
export async function storeText(models: Models, run: string, key: string, text: string, inlineBytes: number): Promise<Text> {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= inlineBytes) return text;
  const ref = `${run}#${key}`;
  const parts = splitParts(text);
  await Promise.all(
    parts.map((data, i) =>
      retryWhileBusy(() => models.RunBlob.collection.replaceOne({ _id: partId(ref, i) as never }, { run, data }, { upsert: true })),
    ),
  );
  return { ref, bytes, parts: parts.length };
}

/** The text behind a reference. Throws when a part is missing (its run was deleted meanwhile). */
export async function loadText(models: Models, text: Text): Promise<string> {
  if (!isRef(text)) return text;
  const parts = await Promise.all(
    Array.from({ length: text.parts }, (_, i) => models.RunBlob.collection.findOne({ _id: partId(text.ref, i) as never }, { projection: { data: 1 } })),
  );
  if (parts.some((p) => !p)) throw new StoredContentMissing(`stored content ${text.ref} is missing`);
  return parts.map((p) => p!.data as string).join('');
}

/** Splits without cutting a surrogate pair in two (a lone surrogate would not survive UTF-8). */
function splitParts(text: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(text.length, i + PART_CHARS);
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
    parts.push(text.slice(i, end));
    i = end;
  }
  return parts;
}

/**
 * Writes items at indices `from`… of pages 1.. (indices below PAGE_SIZE are the record's: see runs.ts). Returns
 * the `$set` of the record's own page for the caller to write with the record, so one write serves a small run.
 */
export async function writePages(models: Models, run: string, kind: PagedKind, from: number, items: unknown[]): Promise<Record<string, unknown>> {
  const recordSet: Record<string, unknown> = {};
  const pages = new Map<number, Record<string, unknown>>();
  items.forEach((item, k) => {
    const index = from + k;
    const page = Math.floor(index / PAGE_SIZE);
    if (page === 0) {
      recordSet[`${kind === 'e' ? 'results' : 'messages'}.${index}`] = item;
      return;
    }
    let set = pages.get(page);
    if (!set) pages.set(page, (set = {}));
    set[`${kind}.${index - page * PAGE_SIZE}`] = item;
  });
  await Promise.all(
    [...pages].map(([page, set]) =>
      retryWhileBusy(() => models.RunPage.collection.updateOne({ _id: pageId(run, page) as never }, { $set: set, $setOnInsert: { run } }, { upsert: true })),
    ),
  );
  return recordSet;
}

/**
 * Items [from, to) as stored (contents may be references). `firstPage` is the record's own page (`results` or
 * `messages`). Throws when one is missing: a caller asks only for what a record or a query said was written.
 */
export async function readPaged<T>(models: Models, run: string, kind: PagedKind, firstPage: readonly unknown[], from: number, to: number): Promise<T[]> {
  if (to <= from) return [];
  const firstPageNo = Math.floor(from / PAGE_SIZE);
  const lastPageNo = Math.floor((to - 1) / PAGE_SIZE);
  const docs = new Map<number, Record<string, unknown>>();
  await Promise.all(
    Array.from({ length: lastPageNo - Math.max(1, firstPageNo) + 1 }, (_, k) => Math.max(1, firstPageNo) + k).map(async (page) => {
      const doc = await models.RunPage.collection.findOne({ _id: pageId(run, page) as never }, { projection: { [kind]: 1 } });
      docs.set(page, ((doc?.[kind] ?? {}) as Record<string, unknown>) ?? {});
    }),
  );
  const items: T[] = [];
  for (let index = from; index < to; index++) {
    const page = Math.floor(index / PAGE_SIZE);
    const item = page === 0 ? firstPage[index] : docs.get(page)?.[String(index - page * PAGE_SIZE)];
    if (item === undefined || item === null) throw new StoredContentMissing(`item ${index} of run ${run} (${kind}) is missing`);
    items.push(item as T);
  }
  return items;
}

/** Deletes what the runs stored besides their records. */
export async function deleteRunContent(models: Models, runs: string[]): Promise<void> {
  if (runs.length === 0) return;
  await Promise.all([retryWhileBusy(() => models.RunPage.deleteMany({ run: { $in: runs } })), retryWhileBusy(() => models.RunBlob.deleteMany({ run: { $in: runs } }))]);
}

/** An entry with its content as text, references loaded with `load`. */
export async function resolveEntry(entry: HeldEntry, load: (text: Text) => Promise<string>): Promise<ResultEntry> {
  if ('exchange' in entry && isRef(entry.exchange.content)) return { ...entry, exchange: { ...entry.exchange, content: await load(entry.exchange.content) } };
  if ('lastMessage' in entry && isRef(entry.lastMessage.content)) return { ...entry, lastMessage: { ...entry.lastMessage, content: await load(entry.lastMessage.content) } };
  if ('approval' in entry) return { ...entry, approval: { ...entry.approval, arguments: parseArguments(await load(entry.approval.arguments as Text)) } };
  return entry as ResultEntry;
}


/** A tool call's arguments as stored (their JSON): the object, or `{ value }` for anything else JSON can hold. */
function parseArguments(json: string): Record<string, unknown> {
  const value: unknown = JSON.parse(json);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
}
