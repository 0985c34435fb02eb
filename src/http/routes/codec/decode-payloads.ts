import type { ContentRef } from '../../../contract/types';
import type { Payload } from './schema';

/** How much stored text one decode answer may carry: what the Web UI shows of one event, bounded whatever is sent. */
export interface DecodeLimits {
  /** Distinct references loaded per request. */
  maxRefs: number;
  /** UTF-8 bytes of loaded texts per request. */
  maxTextBytes: number;
}

/** The text behind a reference, or undefined when it is no longer stored. Throws when the store cannot answer. */
export type LoadText = (ref: ContentRef) => Promise<string | undefined>;

const JSON_PLAIN = 'json/plain';
/** Our payloads nest a reference a few levels deep; nothing below this depth is looked at or rebuilt. */
const MAX_DEPTH = 64;
/** Stored texts read at once per request (each is a few documents). */
const LOAD_CONCURRENCY = 8;
/** Characters per stored part are 256 Ki; a looser bound is enough to refuse an absurd part count. */
const MIN_BYTES_PER_PART = 64 * 1024;

/**
 * Exactly the shape `storeText` writes: `ref` (string), `bytes` and `parts` (integers, parts consistent with bytes).
 * Anything else, however close, is data and is left alone.
 */
export function isContentRef(value: unknown): value is ContentRef {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length !== 3) return false;
  const { ref, bytes, parts } = value as Record<string, unknown>;
  return (
    typeof ref === 'string' &&
    ref.length > 0 &&
    ref.length <= 1024 &&
    typeof bytes === 'number' &&
    Number.isSafeInteger(bytes) &&
    bytes >= 0 &&
    typeof parts === 'number' &&
    Number.isSafeInteger(parts) &&
    parts >= 1 &&
    parts <= 1 + Math.ceil(bytes / MIN_BYTES_PER_PART)
  );
}

/**
 * The payloads with every content reference inside a `json/plain` payload replaced by its text (a short note in
 * brackets when the text is gone or over `limits`). Payloads without references, of another encoding, or whose data
 * is not JSON come back as they were sent; order and count are kept.
 */
export async function decodePayloads(payloads: Payload[], load: LoadText, limits: DecodeLimits): Promise<Payload[]> {
  const refs = new Map<string, ContentRef>();
  const parsed = payloads.map((payload) => {
    const json = parseJsonPayload(payload);
    return json && collectRefs(json.value, 0, refs) > 0 ? json : undefined;
  });
  if (refs.size === 0) return payloads;
  const texts = await loadTexts([...refs.values()], load, limits);
  return payloads.map((payload, i) => {
    const json = parsed[i];
    if (!json) return payload;
    try {
      const data = Buffer.from(JSON.stringify(replaceRefs(json.value, texts, 0)), 'utf8').toString('base64');
      return { ...payload, data };
    } catch {
      // Nesting too deep to write back (JSON.stringify runs out of stack): shown as it was.
      return payload;
    }
  });
}

function parseJsonPayload(payload: Payload): { value: unknown } | undefined {
  const encoding = payload.metadata?.encoding;
  if (!encoding || !payload.data || Buffer.from(encoding, 'base64').toString('utf8') !== JSON_PLAIN) return undefined;
  try {
    return { value: JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) };
  } catch {
    return undefined;
  }
}

/** Adds the references in `value` to `refs`; returns how many it met (a repeated one counts each time). */
function collectRefs(value: unknown, depth: number, refs: Map<string, ContentRef>): number {
  if (isContentRef(value)) {
    if (!refs.has(value.ref)) refs.set(value.ref, value);
    return 1;
  }
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return 0;
  let found = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) found += collectRefs(item, depth + 1, refs);
  return found;
}

function replaceRefs(value: unknown, texts: Map<string, string>, depth: number): unknown {
  if (isContentRef(value)) return texts.get(value.ref) ?? value;
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => replaceRefs(item, texts, depth + 1));
  // fromEntries defines own properties, so a `__proto__` key from JSON.parse stays a plain key.
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceRefs(item, texts, depth + 1)]));
}

/** Every reference's text or note. Loads in the order met while the limits allow; the rest get a note. */
async function loadTexts(refs: ContentRef[], load: LoadText, limits: DecodeLimits): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const admitted: ContentRef[] = [];
  let budget = limits.maxTextBytes;
  for (const ref of refs) {
    if (admitted.length < limits.maxRefs && ref.bytes <= budget) {
      admitted.push(ref);
      budget -= ref.bytes;
    } else {
      texts.set(ref.ref, `[stored content ${ref.ref} (${ref.bytes} bytes) not shown: one answer holds at most ${limits.maxRefs} stored texts and ${limits.maxTextBytes} bytes of them]`);
    }
  }
  let next = 0;
  const worker = async () => {
    while (next < admitted.length) {
      const ref = admitted[next++]!;
      const text = await load(ref);
      // The budget counted declared sizes: a text of another size is not what the reference names.
      if (text === undefined) texts.set(ref.ref, `[stored content ${ref.ref} is no longer stored: its run was deleted]`);
      else if (Buffer.byteLength(text, 'utf8') !== ref.bytes) texts.set(ref.ref, `[stored content ${ref.ref} does not match its reference]`);
      else texts.set(ref.ref, text);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, admitted.length) }, worker));
  return texts;
}
