import type { Models } from '../../store/models';
import { resolveEntry } from '../../store/run-content';
import { entryCount, readEntries, type RunRecord } from '../../store/runs';
import type { HeldEntry, RunUsage, Text } from '../../contract/types';
import { presentRun, type ReplayHead, type RunView } from './run';

/** The run's name and creation time: a record, or what a query said when the record cannot be read. */
export type RunHead = { name: string; created_at: Date | number } & ReplayHead;

/** What a run holds now: a live query's answer, or a record's fields. `entries` from the first, as held. */
export type RunBody = { status: string; modifiedAt: Date | number; entries: HeldEntry[]; usage?: RunUsage | null };

/** Loads a stored text (a reference); a text held inline is itself. Throws StoredContentMissing once it is deleted. */
export type TextLoader = (text: Text) => Promise<string>;

/**
 * The run object exactly as reads present it (docs/runs.md, "The run object"): `body`'s entries with their stored
 * contents loaded through `load`. Reads, run lists and webhook deliveries all render a run with this. Throws
 * StoredContentMissing when a content is gone (the run is being deleted).
 */
export async function renderRun(head: RunHead, body: RunBody, load: TextLoader): Promise<RunView> {
  const results = await Promise.all(body.entries.map((entry) => resolveEntry(entry, load)));
  return presentRun({ name: head.name, status: body.status, results, createdAt: head.created_at, modifiedAt: body.modifiedAt, usage: body.usage, replay: head.replay, eval: head.eval, trace_id: head.trace_id });
}

/** A record's run as reads present it: every entry it holds, from the store. Throws as `renderRun`. */
export async function renderRecord(models: Models, record: RunRecord, load: TextLoader): Promise<RunView> {
  const entries = await readEntries(models, record, 0, entryCount(record));
  return renderRun(record, { status: record.status, modifiedAt: record.modified_at, entries, usage: record.usage }, load);
}
