import crypto from 'node:crypto';
import type { ContentRef, HeldEntry, ResultEntry, Text } from '../contract/types';
import { retryWhileBusy } from './connect';
import type { Models } from './models';

/**
 * A run's contents besides its record, each document bounded whatever the run:
 * - entries and conversation messages in pages of PAGE_SIZE: page 0 in the run record (`results`, `messages`),
 *   pages 1.. in `run_pages` (`<run>#p<n>.<e|m>.<version>`, field `e` or `m`: index within the page → item; the
 *   record names the version it committed, PageVersions);
 * - texts larger than the inline limit in `run_blobs`, in parts of PART_CHARS (`<run>#<key>@<part>`).
 * Every document is found by `_id` (FerretDB pushes down nothing else) and carries `run` so it goes with its run.
 * Writing the same items again (a retried activity) writes the same documents: nothing changes.
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
 * Which version of each page past the first a record has committed: `{ e<n>: version, m<n>: version }` (the record's
 * `page_versions`). A page's document is never changed once written: a write that adds to a page writes the page
 * anew under a version of its own (a hash of its items, so the same write made again writes the same document), and
 * the record's conditional update commits it. A write that loses its condition leaves only a document no record names
 * (deleted with its run): it can never change what a closed record, or a reader's copy of an older one, reads.
 */
export type PageVersions = Record<string, string>;

const versionedPageId = (run: string, kind: PagedKind, page: number, version: string | undefined) =>
  version === undefined ? pageId(run, page) : `${pageId(run, page)}.${kind}.${version}`;

/**
 * Writes items at indices `from`… of pages 1.. as new page versions (indices below PAGE_SIZE are the record's: see
 * runs.ts), keeping what the committed version of a page (`versions`) holds before `from`. Returns the `$set` of the
 * record's own page and of its page versions, for the caller to write with the record in one conditional update.
 */
export async function writePages(models: Models, run: string, kind: PagedKind, from: number, items: unknown[], versions: PageVersions = {}): Promise<Record<string, unknown>> {
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
    set[String(index - page * PAGE_SIZE)] = item;
  });
  await Promise.all(
    [...pages].map(async ([page, added]) => {
      const committed = versions[`${kind}${page}`];
      const before = page * PAGE_SIZE < from && committed !== undefined ? await readPage(models, run, kind, page, committed) : {};
      const kept = Object.fromEntries(Object.entries(before).filter(([i]) => page * PAGE_SIZE + Number(i) < from));
      const content = { ...kept, ...added };
      const version = crypto.createHash('sha256').update(JSON.stringify(Object.entries(content).sort(([a], [b]) => Number(a) - Number(b)))).digest('base64url').slice(0, 16);
      await retryWhileBusy(() => models.RunPage.collection.replaceOne({ _id: versionedPageId(run, kind, page, version) as never }, { run, [kind]: content }, { upsert: true }));
      recordSet[`page_versions.${kind}${page}`] = version;
    }),
  );
  return recordSet;
}

/** Page `page` (1..) of a run's entries or messages as stored: `{ <index in page>: item }`, empty when there is none. */
export async function readPage(models: Models, run: string, kind: PagedKind, page: number, version: string | undefined): Promise<Record<string, unknown>> {
  const doc = await models.RunPage.collection.findOne({ _id: versionedPageId(run, kind, page, version) as never }, { projection: { [kind]: 1 } });
  return ((doc?.[kind] ?? {}) as Record<string, unknown>) ?? {};
}

/**
 * Items [from, to) as stored (contents may be references). `firstPage` is the record's own page (`results` or
 * `messages`), `versions` its committed page versions. Throws when one is missing: a caller asks only for what a
 * record or a query said was written.
 */
export async function readPaged<T>(models: Models, run: string, kind: PagedKind, firstPage: readonly unknown[], from: number, to: number, versions: PageVersions = {}): Promise<T[]> {
  if (to <= from) return [];
  const firstPageNo = Math.floor(from / PAGE_SIZE);
  const lastPageNo = Math.floor((to - 1) / PAGE_SIZE);
  const docs = new Map<number, Record<string, unknown>>();
  await Promise.all(
    Array.from({ length: lastPageNo - Math.max(1, firstPageNo) + 1 }, (_, k) => Math.max(1, firstPageNo) + k).map(async (page) => {
      docs.set(page, await readPage(models, run, kind, page, versions[`${kind}${page}`]));
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

/**
 * Deletes what the runs stored besides their records (pages, large texts, the claims of their ends, a text so far and a
 * follow, a replay's recorded tool results and replay counter).
 */
export async function deleteRunContent(models: Models, runs: string[]): Promise<void> {
  if (runs.length === 0) return;
  await Promise.all([
    retryWhileBusy(() => models.RunPage.deleteMany({ run: { $in: runs } })),
    retryWhileBusy(() => models.RunBlob.deleteMany({ run: { $in: runs } })),
    retryWhileBusy(() => models.RunEnd.deleteMany({ run: { $in: runs } })),
    retryWhileBusy(() => models.RunText.collection.deleteMany({ _id: { $in: runs as never[] } })),
    retryWhileBusy(() => models.RunFollow.collection.deleteMany({ _id: { $in: runs as never[] } })),
    // A replay's recorded tool results, and the counter of a run's replay names (src/replays/).
    retryWhileBusy(() => models.ReplayTool.deleteMany({ run: { $in: runs } })),
    retryWhileBusy(() => models.ReplayCounter.collection.deleteMany({ _id: { $in: runs as never[] } })),
  ]);
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
