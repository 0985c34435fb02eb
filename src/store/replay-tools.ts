import crypto from 'node:crypto';
import canonicalize from 'canonicalize';
import type { CallToolResult, Message, Text } from '../contract/types';
import { retryWhileBusy } from './connect';
import type { Models } from './models';
import { loadText, PAGE_SIZE, readPage, type PageVersions } from './run-content';
import type { RunRecord } from './runs';

/**
 * A tool call's matching key (docs/replays.md, "Matching"): its arguments as RFC 8785 canonical JSON, so that key
 * order and number spelling do not tell two calls apart; arguments that are not JSON match as the raw string.
 */
export function canonicalKey(argumentsText: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsText);
  } catch {
    return argumentsText;
  }
  try {
    return canonicalize(parsed) ?? argumentsText;
  } catch {
    return argumentsText; // a number JSON cannot say (canonicalize refuses NaN and Infinity, which JSON.parse never gives)
  }
}

/**
 * A call's short key, the same for every call of `tool` with arguments of canonical `key`: what the workflow counts
 * uses by (a replay's `used`, small in history whatever the arguments' size).
 */
export const callKey = (tool: string, key: string) => crypto.createHash('sha256').update(`${tool}\u0000${key}`).digest('base64url').slice(0, 24);

/** One recorded result's `_id`: found by `_id` (FerretDB scans for any other filter). */
const recordedId = (run: string, callKeyed: string, n: number) => `${run}#${callKeyed}#${n}`;

/** A tool call of a run's conversation with its result, in the order the results were given. */
export interface RecordedCall {
  tool: string;
  /** The arguments' JSON text as the model gave them. */
  arguments: string;
  result: CallToolResult;
}

/**
 * The tool calls of a closed run, each paired with its result (the assistant's `toolCalls` with the tool messages by
 * `callId`), contents loaded. Calls without a result (the run ended before it came) are left out.
 */
export async function readRecordedCalls(models: Models, record: Pick<RunRecord, '_id' | 'messages' | 'page_versions'>): Promise<RecordedCall[]> {
  const messages = await readAllMessages(models, record);
  const asked = new Map<string, { tool: string; arguments: Text }>();
  const calls: RecordedCall[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) asked.set(call.id, { tool: call.name, arguments: call.arguments });
    } else if (message.role === 'tool') {
      const call = asked.get(message.callId);
      if (!call) continue;
      asked.delete(message.callId);
      const result: CallToolResult =
        'json' in message
          ? (JSON.parse(await loadText(models, message.json)) as CallToolResult)
          : { content: [{ type: 'text', text: await loadText(models, message.text) }], ...(message.isError ? { isError: true } : {}) };
      calls.push({ tool: call.tool, arguments: await loadText(models, call.arguments), result: { ...result, ...(message.isError ? { isError: true } : {}) } });
    }
  }
  return calls;
}

/** Every message of a run's conversation: the record's page, then the pages after it (their committed versions). */
async function readAllMessages(models: Models, record: Pick<RunRecord, '_id' | 'messages' | 'page_versions'>): Promise<Message[]> {
  // The record's page is an array, or an object by index (the recorder's `$set` of `messages.<i>` on a record without one).
  const first = (record.messages ?? {}) as Record<number, Message | undefined>;
  const all: Message[] = [];
  for (let i = 0; i < PAGE_SIZE && first[i] !== undefined && first[i] !== null; i++) all.push(first[i]!);
  const versions = (record.page_versions ?? {}) as PageVersions;
  for (let page = 1; all.length === page * PAGE_SIZE; page++) {
    const items = await readPage(models, record._id, 'm', page, versions[`m${page}`]);
    for (let i = 0; items[String(i)] !== undefined; i++) all.push(items[String(i)] as Message);
  }
  return all;
}

/**
 * Copies a run's recorded tool results for its replay `replayRunId`, keyed by tool, canonical arguments and
 * occurrence. Written by `_id` with upserts: the same copy made again (a retried request) writes the same documents.
 */
export async function copyRecordedTools(models: Models, calls: readonly RecordedCall[], replayRunId: string): Promise<number> {
  const seen = new Map<string, number>();
  const docs = calls.map((call) => {
    const key = canonicalKey(call.arguments);
    const keyed = callKey(call.tool, key);
    const n = seen.get(keyed) ?? 0;
    seen.set(keyed, n + 1);
    return { _id: recordedId(replayRunId, keyed, n), run: replayRunId, tool: call.tool, key, n, result_json: JSON.stringify(call.result) };
  });
  for (let i = 0; i < docs.length; i += COPY_BATCH) {
    await Promise.all(
      docs.slice(i, i + COPY_BATCH).map((doc) => retryWhileBusy(() => models.ReplayTool.collection.replaceOne({ _id: doc._id as never }, doc, { upsert: true }))),
    );
  }
  return docs.length;
}

/** Upserts made at once when copying a run's tool results. */
const COPY_BATCH = 16;

/** The `n`-th recorded result (0 the first) of calls of key `callKeyed` (`callKey`), or null. */
export async function findRecordedResult(models: Models, run: string, callKeyed: string, n: number): Promise<CallToolResult | null> {
  const doc = await models.ReplayTool.collection.findOne({ _id: recordedId(run, callKeyed, n) as never });
  return doc ? (JSON.parse(doc.result_json as string) as CallToolResult) : null;
}

/** The next number of a run's replay names (1 the first), taken atomically. */
export async function nextReplayNumber(models: Models, originalId: string): Promise<number> {
  // FerretDB: no projection in findOneAndUpdate.
  const doc = await retryWhileBusy(() => models.ReplayCounter.collection.findOneAndUpdate({ _id: originalId as never }, { $inc: { n: 1 } }, { upsert: true, returnDocument: 'after' }));
  return (doc?.n as number | undefined) ?? 1;
}
