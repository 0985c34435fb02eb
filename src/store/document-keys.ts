/**
 * Reversible escaping of object keys FerretDB refuses (a leading "$", any "."), for JSON stored as a document
 * rather than as text, such as a servlet's tool schemas (JSON Schema has "$schema", "$ref", "$defs"). Only "%",
 * "$" and "." are percent-encoded, so ordinary keys are stored, and read by other code, unchanged.
 */
export function escapeKeys(value: unknown): unknown {
  return mapKeys(value, (key) => key.replace(/[%$.]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
}

/** The inverse of escapeKeys. */
export function unescapeKeys(value: unknown): unknown {
  return mapKeys(value, (key) => key.replace(/%(25|24|2E)/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))));
}

function mapKeys(value: unknown, rename: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => mapKeys(v, rename));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    // defineProperty: a "__proto__" key from JSON stays a plain key instead of replacing the prototype
    Object.defineProperty(out, rename(key), { value: mapKeys(v, rename), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
