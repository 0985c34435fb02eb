import { LRUCache } from 'lru-cache';
import type { ContentRef, Text } from '../contract/types';
import type { Models } from './models';
import { isRef, loadText, StoredContentMissing } from './run-content';

/**
 * Copies of stored texts (run_blobs), bounded in characters. A stored text never changes, so a copy is never
 * stale; concurrent loads of one share a read (lru-cache's fetch). What falls out is read again.
 */
export function createTextCache(models: Models, maxChars: number) {
  const texts = new LRUCache<string, string, ContentRef>({
    maxSize: Math.max(1, maxChars),
    sizeCalculation: (value) => Math.max(1, value.length),
    fetchMethod: (_ref, _stale, { context }) => loadText(models, context),
  });
  return {
    /** The text behind a reference (or the text itself). Throws when it is no longer stored. */
    async load(value: Text): Promise<string> {
      if (!isRef(value)) return value;
      const loaded = await texts.fetch(value.ref, { context: value });
      if (loaded === undefined) throw new StoredContentMissing(`stored content ${value.ref} could not be read`);
      return loaded;
    },
    /** A text this process just stored: its next reads need not go to the store. */
    remember(value: Text, content: string): void {
      if (isRef(value)) texts.set(value.ref, content);
    },
  };
}

export type TextCache = ReturnType<typeof createTextCache>;
