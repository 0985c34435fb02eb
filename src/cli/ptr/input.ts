import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { UsageError } from './errors';

/** Collects a repeatable option's values (`--data a=1 --data b=2`). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The bytes of `file` (`-`: standard input). Throws UsageError when it cannot be read. */
export function readInput(file: string): Buffer {
  try {
    return fs.readFileSync(file === '-' ? 0 : file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/**
 * A JSON object from a `.json` file, or from YAML (any other name; YAML 1.2 reads JSON too). Throws UsageError
 * naming the file when it is not an object.
 */
export function readObjectFile(file: string): Record<string, unknown> {
  const text = readInput(file).toString('utf8');
  let value: unknown;
  try {
    value = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    // Whole: YAML's message ends with the line and a caret under the mistake.
    throw new UsageError(`${file}: ${(err as Error).message.trimEnd()}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${file}: expected an object (a mapping of fields)`);
  return value as Record<string, unknown>;
}

/** A JSON object given on the command line (`option` names it). Throws UsageError when it is not one. */
export function parseObject(option: string, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${option}: not JSON (${(err as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${option}: expected a JSON object`);
  return value as Record<string, unknown>;
}

/** `key=value` pairs as an object (a later key wins). Throws UsageError naming `option` for a pair without `=`. */
export function parsePairs(pairs: string[] | undefined, option: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`${option}: expected key=value, got "${pair}"`);
    // defined, not assigned: `__proto__=x` is data like any other key
    Object.defineProperty(out, pair.slice(0, at), { value: pair.slice(at + 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
