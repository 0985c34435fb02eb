/**
 * Caps a module's linear memory by rewriting the maximum in its memory section. Extism's `memory.maxPages` only
 * bounds host-side buffers; the guest's own `memory.grow` is bounded by nothing but this maximum (and the 4 GiB
 * of wasm32), so without it a servlet can take gigabytes. Past the cap `memory.grow` returns -1, which programs
 * treat as out of memory.
 */

export const PAGE_BYTES = 64 * 1024;
const MEMORY_SECTION = 5;

/** Throws an Error naming the problem when the bytes are not a core module or its memory cannot be capped. */
export function capMemory(bytes: Uint8Array, maxPages: number): Uint8Array {
  const magic = [0x00, 0x61, 0x73, 0x6d];
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) throw new Error('not a WebAssembly module (bad magic number)');
  if (bytes[4] !== 1 || bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) {
    throw new Error('not a WebAssembly core module of version 1 (components are not supported)');
  }
  const parts: Uint8Array[] = [bytes.subarray(0, 8)];
  let pos = 8;
  while (pos < bytes.length) {
    const start = pos;
    const id = bytes[pos++]!;
    const [size, next] = readU32(bytes, pos);
    const end = next + size;
    if (end > bytes.length) throw new Error(`section ${id} runs past the end of the module`);
    if (id === MEMORY_SECTION) {
      const content = rewriteMemories(bytes.subarray(next, end), maxPages);
      parts.push(Uint8Array.of(MEMORY_SECTION), writeU32(content.length), content);
    } else {
      parts.push(bytes.subarray(start, end));
    }
    pos = end;
  }
  return Buffer.concat(parts);
}

function rewriteMemories(section: Uint8Array, maxPages: number): Uint8Array {
  let [count, pos] = readU32(section, 0);
  const out: number[] = [...writeU32(count)];
  while (count-- > 0) {
    const flags = section[pos++];
    if (flags === undefined || flags > 3) throw new Error('declares a 64-bit or otherwise unsupported memory');
    const shared = (flags & 2) !== 0;
    let min: number;
    let max: number | undefined;
    [min, pos] = readU32(section, pos);
    if (flags & 1) [max, pos] = readU32(section, pos);
    if (min > maxPages) {
      throw new Error(`needs ${mib(min)} MB of memory at start, over the limit of ${mib(maxPages)} MB`);
    }
    const capped = Math.min(max ?? maxPages, maxPages);
    out.push(shared ? 3 : 1, ...writeU32(min), ...writeU32(capped));
  }
  if (pos !== section.length) throw new Error('has a malformed memory section');
  return Uint8Array.from(out);
}

function mib(pages: number): string {
  return String(Math.round(((pages * PAGE_BYTES) / (1024 * 1024)) * 100) / 100);
}

/** Unsigned LEB128 (at most 5 bytes): the value and the position after it. */
export function readU32(bytes: Uint8Array, at: number): [number, number] {
  let result = 0;
  let shift = 0;
  for (let pos = at; pos < at + 5; pos++) {
    const b = bytes[pos];
    if (b === undefined) break;
    result += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) {
      if (result > 0xffffffff) break;
      return [result, pos + 1];
    }
  }
  throw new Error(`has a malformed number at byte ${at}`);
}

export function writeU32(value: number): Uint8Array {
  const out: number[] = [];
  let v = value;
  do {
    const b = v & 0x7f;
    v = Math.floor(v / 128);
    out.push(v === 0 ? b : b | 0x80);
  } while (v !== 0);
  return Uint8Array.from(out);
}
