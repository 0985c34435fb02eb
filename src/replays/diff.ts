import { createTwoFilesPatch, diffArrays } from 'diff';
import type { Models } from '../store/models';
import type { HeldEntry, RunStatus, RunUsage } from '../contract/types';
import { NO_USAGE } from '../contract/constants';
import { entryCount, readEntries, type RunRecord } from '../store/runs';
import { loadText } from '../store/run-content';
import { canonicalKey, readRecordedCalls } from '../store/replay-tools';

/** One run's side of a diff (GET <replay path>/diff). */
export interface DiffSide {
  name: string;
  status: RunStatus;
  /** The final answer; null when the run ended without one (an error). */
  answer: string | null;
  usage: RunUsage;
  duration_ms: number;
}

/** A tool call of either run, as the diff pairs them. */
export interface DiffCall {
  tool: string;
  /** The arguments as the model gave them: their JSON parsed, or the text when it is not JSON. */
  arguments: unknown;
  /** The replay's call was answered from the original's recorded result. */
  replayed?: boolean;
}

export interface ToolCallChange {
  change: 'same' | 'added' | 'removed' | 'changed';
  tool: string;
  original_arguments?: unknown;
  replay_arguments?: unknown;
  replayed?: boolean;
}

/** What GET <replay path>/diff answers (docs/replays.md, "The diff"). */
export interface RunDiff {
  original: DiffSide;
  replay: DiffSide;
  /** The answers' unified diff (original first); null when they differ too much to diff within DIFF_TIMEOUT_MS. */
  answer_diff: string | null;
  tool_calls: ToolCallChange[];
}

/** The most a diff of two answers may compute (jsdiff's own bound: a larger difference gives no diff). */
const DIFF_TIMEOUT_MS = 1_000;

/**
 * The difference of a replay from its original: the answers' unified diff, their tool calls side by side and each
 * run's usage and duration. Both runs must be closed (the caller checks). Throws StoredContentMissing when one was
 * deleted meanwhile.
 */
export async function runDiff(models: Models, original: RunRecord, replay: RunRecord): Promise<RunDiff> {
  const [a, b] = await Promise.all([loadSide(models, original), loadSide(models, replay)]);
  return buildRunDiff(a, b);
}

/** The diff of two runs' sides (the pure part of `runDiff`). */
export function buildRunDiff(original: DiffSide & { calls: DiffCall[] }, replay: DiffSide & { calls: DiffCall[] }): RunDiff {
  const { calls: before, ...originalSide } = original;
  const { calls: after, ...replaySide } = replay;
  const patch = createTwoFilesPatch(original.name, replay.name, withNewline(original.answer), withNewline(replay.answer), undefined, undefined, { timeout: DIFF_TIMEOUT_MS });
  return { original: originalSide, replay: replaySide, answer_diff: patch ?? null, tool_calls: pairCalls(before, after) };
}

/**
 * The calls of both runs in order, paired by tool where the two sequences agree (a longest common subsequence of the
 * tool names): a pair is `same` when its canonical arguments are equal, else `changed`; a call only the original
 * made is `removed`, one only the replay made `added`.
 */
export function pairCalls(before: DiffCall[], after: DiffCall[]): ToolCallChange[] {
  const changes: ToolCallChange[] = [];
  let i = 0;
  let j = 0;
  for (const part of diffArrays(before.map((c) => c.tool), after.map((c) => c.tool))) {
    for (let k = 0; k < part.count; k++) {
      if (part.removed) {
        const call = before[i++]!;
        changes.push({ change: 'removed', tool: call.tool, original_arguments: call.arguments });
      } else if (part.added) {
        const call = after[j++]!;
        changes.push({ change: 'added', tool: call.tool, replay_arguments: call.arguments, ...replayedOf(call) });
      } else {
        const was = before[i++]!;
        const now = after[j++]!;
        const same = canonicalKey(JSON.stringify(was.arguments)) === canonicalKey(JSON.stringify(now.arguments));
        changes.push({ change: same ? 'same' : 'changed', tool: now.tool, original_arguments: was.arguments, replay_arguments: now.arguments, ...replayedOf(now) });
      }
    }
  }
  return changes;
}

const replayedOf = (call: DiffCall) => (call.replayed !== undefined ? { replayed: call.replayed } : {});

/** A unified diff of texts without a final newline says so on every hunk: the answers are compared as lines. */
const withNewline = (text: string | null) => (text === null || text === '' || text.endsWith('\n') ? (text ?? '') : `${text}\n`);

/**
 * A closed run's final answer: its last entry's message when it ended `ready`, else null. Reads that entry only (an
 * eval scores hundreds of replays: src/evals, activities/evals.ts). Throws StoredContentMissing when it was deleted.
 */
export async function finalAnswer(models: Models, record: RunRecord): Promise<string | null> {
  const count = entryCount(record);
  if (record.status !== 'ready' || count === 0) return null;
  const [last] = await readEntries(models, record, count - 1, count);
  return finalOf(models, last);
}

const finalOf = async (models: Models, last: HeldEntry | undefined) => (last && 'lastMessage' in last ? await loadText(models, last.lastMessage.content) : null);

async function loadSide(models: Models, record: RunRecord): Promise<DiffSide & { calls: DiffCall[] }> {
  const entries = await readEntries(models, record, 0, entryCount(record));
  const answer = record.status === 'ready' ? await finalOf(models, entries.at(-1)) : null;
  // The tool results' entries, in order, say which calls were answered from a recorded result (a replay's).
  const replayed = entries.filter(isToolResult).map((e) => e.replayed === true);
  const calls = (await readRecordedCalls(models, record)).map((call, k) => ({
    tool: call.tool,
    arguments: parsedArguments(call.arguments),
    ...(record.replay ? { replayed: replayed[k] ?? false } : {}),
  }));
  return {
    name: record.name,
    status: record.status as RunStatus,
    answer,
    usage: { ...NO_USAGE, ...(record.usage as RunUsage | undefined) },
    duration_ms: record.modified_at.getTime() - record.created_at.getTime(),
    calls,
  };
}

const isToolResult = (entry: HeldEntry): entry is Extract<HeldEntry, { exchange: unknown }> => 'exchange' in entry && entry.exchange.role === 'tool';

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
