import { LRUCache } from 'lru-cache';
import type { Models } from '../src/store/models';
import { readMessages } from '../src/store/runs';
import { createTextCache } from '../src/store/text-cache';
import type { CallToolResult, Message, RunRef, Text, Turn } from '../src/contract/types';

/** Conversations kept at most, whatever their size: a worker's runs in flight, and then some. */
const MAX_CONVERSATIONS = 20_000;
/** What a cached conversation costs beyond its texts (its entry, arrays and key), and each turn's object, in bytes. */
const CONVERSATION_BYTES = 400;
const TURN_BYTES = 150;

/**
 * The worker's copies of run contents, so that a turn costs the same on turn 50 as on turn 1: a model call is given
 * only the number of messages, and reads from the store just those this worker has not seen (usually none: the
 * record write that saved them, on this worker, adds them here). Texts are immutable once stored, so a copy is never
 * stale. Bounded in bytes; what falls out is read again from the store.
 */
export function createRunContentCache(models: Models, maxBytes: number) {
  const texts = createTextCache(models, Math.floor(maxBytes / 2));
  interface Conversation {
    turns: Turn[];
    chars: number;
  }
  const conversations = new LRUCache<string, Conversation>({
    max: MAX_CONVERSATIONS,
    maxSize: Math.max(1, Math.floor(maxBytes / 2)),
    // What a copy holds beyond its texts counts too: a one-line prompt's conversation is mostly objects and its key.
    sizeCalculation: (value, key) => CONVERSATION_BYTES + key.length * 2 + value.turns.length * TURN_BYTES + value.chars,
  });
  const keyOf = (run: RunRef) => `${run.id}@${run.createdAt}`;

  const text = (value: Text): Promise<string> => texts.load(value);

  const toTurn = async (message: Message): Promise<{ turn: Turn; chars: number }> => {
    if (message.role === 'user') {
      const t = await text(message.text);
      return { turn: { role: 'user', text: t }, chars: t.length };
    }
    if (message.role === 'assistant') {
      const t = await text(message.text);
      const args = await Promise.all(message.toolCalls.map((c) => text(c.arguments)));
      const toolCalls = message.toolCalls.map((c, i) => ({ id: c.id, name: c.name, arguments: JSON.parse(args[i]!) as Record<string, unknown> }));
      return { turn: { role: 'assistant', text: t, toolCalls }, chars: t.length + args.reduce((n, a) => n + a.length, 0) };
    }
    const call = { id: message.callId, name: message.name };
    if ('text' in message) {
      const t = await text(message.text);
      return { turn: { role: 'tool', call, result: { content: [{ type: 'text', text: t }], isError: message.isError } }, chars: t.length };
    }
    const json = await text(message.json);
    return { turn: { role: 'tool', call, result: JSON.parse(json) as CallToolResult }, chars: json.length };
  };

  const extend = async (conversation: Conversation, messages: Message[]) => {
    for (const { turn, chars } of await Promise.all(messages.map(toTurn))) {
      conversation.turns.push(turn);
      conversation.chars += chars;
    }
  };

  return {
    /** The text behind a reference (or the text itself). */
    text,
    /** A text this worker just stored: the next reads of it need not go to the store. */
    remember: texts.remember,
    /** The run's first `count` messages, resolved: only those not cached yet are read from the store. */
    async conversation(run: RunRef, count: number): Promise<Turn[]> {
      const key = keyOf(run);
      let cached = conversations.get(key);
      if (!cached || cached.turns.length > count) cached = { turns: [], chars: 0 };
      if (cached.turns.length < count) {
        await extend(cached, await readMessages(models, run.id, cached.turns.length, count));
        conversations.set(key, cached);
      }
      return cached.turns.slice(0, count);
    },
    /** The run has ended: its conversation is not asked for again (by this worker; another's copy ages out). */
    forget(run: RunRef): void {
      conversations.delete(keyOf(run));
    },
    /** Messages written at `from`: added when the cache holds the conversation up to there (else read when needed). */
    async saved(run: RunRef, from: number, messages: Message[]): Promise<void> {
      const key = keyOf(run);
      const cached = from === 0 ? { turns: [], chars: 0 } : conversations.get(key);
      if (!cached || cached.turns.length !== from || messages.length === 0) return;
      await extend(cached, messages);
      conversations.set(key, cached);
    },
  };
}

export type RunContentCache = ReturnType<typeof createRunContentCache>;
