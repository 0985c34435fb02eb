import { NO_USAGE } from '../src/contract/constants';
import type { HeldEntry, Message, RunSnapshot, RunStatus, RunUsage, Text } from '../src/contract/types';

/** Most a query answer carries of entries (its content references stay references): a bounded answer. */
const SNAPSHOT_MAX_BYTES = 1024 * 1024;

/**
 * A run's entries and conversation as one workflow execution holds them. Entries are numbered from the run's start
 * (across continue-as-new); this execution holds those from `base` on, and the store has every entry before
 * `recordedEntries` and every message before `recordedMessages`. `take()` hands over what the next record write
 * must store. Contents are `Text`: large ones are references, so what this holds stays small.
 */
export class RunLog {
  status: RunStatus = 'pending';
  modifiedAt: number;
  /** What the run used so far; written with every record write. */
  usage: RunUsage;
  private readonly held: HeldEntry[] = [];
  /** JSON size of each held entry, for bounded query answers (entries never change once pushed). */
  private readonly sizes: number[] = [];
  private readonly base: number;
  private recordedEntries: number;
  private readonly unsavedMessages: Message[] = [];
  private recordedMessages: number;

  private readonly createdAt: number;

  constructor(start: { createdAt: number; entries: number; messages: number; at: number; status?: RunStatus; usage?: RunUsage }) {
    this.createdAt = start.createdAt;
    this.usage = { ...(start.usage ?? NO_USAGE) };
    this.base = this.recordedEntries = start.entries;
    this.recordedMessages = start.messages;
    this.modifiedAt = start.at;
    if (start.status) this.status = start.status;
  }

  get total(): number {
    return this.base + this.held.length;
  }

  /** Whether the store has every entry and message (nothing waits for a write). */
  get allRecorded(): boolean {
    return this.recordedEntries === this.total && this.unsavedMessages.length === 0;
  }

  /** The prompt (message 0) while the store does not have it: a model call is given it instead of reading it. */
  get unrecordedPrompt(): Text | undefined {
    const first = this.recordedMessages === 0 ? this.unsavedMessages[0] : undefined;
    return first?.role === 'user' ? first.text : undefined;
  }

  /** Messages in the conversation so far, saved or not. */
  get messages(): number {
    return this.recordedMessages + this.unsavedMessages.length;
  }

  push(...entries: HeldEntry[]): void {
    for (const entry of entries) {
      this.held.push(entry);
      this.sizes.push(JSON.stringify(entry).length);
    }
    this.modifiedAt = Date.now();
  }

  /** Entries the store already has (legacy runs: their prepare step and first call write their own). */
  pushRecorded(entries: HeldEntry[], at: number): void {
    this.push(...entries);
    this.recordedEntries = this.total;
    this.modifiedAt = at;
  }

  /** Legacy runs: the prepare step stored the prompt as message 0. */
  promptRecorded(): void {
    this.recordedMessages = Math.max(this.recordedMessages, 1);
  }

  addMessage(message: Message): void {
    this.unsavedMessages.push(message);
  }

  /** Forgets what the store did not take (its record was closed by another writer): the view is then the record's. */
  discardUnrecorded(): void {
    this.held.splice(this.recordedEntries - this.base);
    this.sizes.splice(this.recordedEntries - this.base);
    this.unsavedMessages.length = 0;
  }

  /** What a record write must store now; call `recorded()` with it once written. */
  take(): { entries: { from: number; items: HeldEntry[] }; messages: { from: number; items: Message[] } } {
    return {
      entries: { from: this.recordedEntries, items: this.held.slice(this.recordedEntries - this.base) },
      messages: { from: this.recordedMessages, items: [...this.unsavedMessages] },
    };
  }

  recorded(written: ReturnType<RunLog['take']>): void {
    this.recordedEntries = Math.max(this.recordedEntries, written.entries.from + written.entries.items.length);
    const saved = written.messages.from + written.messages.items.length - this.recordedMessages;
    if (saved > 0) {
      this.unsavedMessages.splice(0, saved);
      this.recordedMessages += saved;
    }
  }

  /** The `run` query's answer: entries from `from` on (those before `base` are in the store), about a MiB at most. */
  snapshot(from = 0): RunSnapshot {
    const start = Math.max(0, Math.min(this.total, Math.max(from, this.base)));
    const entries: HeldEntry[] = [];
    let bytes = 0;
    for (let i = start - this.base; i < this.held.length; i++) {
      bytes += this.sizes[i]!;
      if (entries.length > 0 && bytes > SNAPSHOT_MAX_BYTES) break;
      entries.push(this.held[i]!);
    }
    return { status: this.status, createdAt: this.createdAt, modifiedAt: this.modifiedAt, total: this.total, from: start, entries, usage: { ...this.usage } };
  }
}

