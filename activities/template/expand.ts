import Mustache from 'mustache';
import { BoundedWriter } from './bounded-writer';
import { TemplateFailure } from './failure';

/**
 * Mustache without HTML escaping: a prompt is not HTML, so `&`, `<` and quotes pass through unchanged. An object
 * placeholder expands to its JSON rather than "[object Object]".
 */
const RAW = { escape: (value: unknown) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)) };

type Token = [string, string, number, number, Token[]?, number?];

/** What the expansion of a template gives. */
export interface Expanded {
  prompt: string;
  missing: string[];
}

/**
 * Expands `{{ name }}`, dotted paths `{{ a.b }}` and `{{ @payload }}` (the whole payload as JSON). Returns the
 * placeholders that had no value: they expand to empty, and the run logs a warning naming each.
 *
 * Its time grows exponentially with the nesting of list sections and nothing here can stop it: the worker calls it
 * only in a thread of the sandbox (sandbox.ts). Throws TemplateFailure: `invalid` with Mustache's own message (or
 * the error rendering met), `too_large` as soon as the prompt passes `maxPromptBytes` (UTF-8).
 */
export function expandTemplate(template: string, payload: Record<string, unknown>, maxPromptBytes = Infinity): Expanded {
  return expand(template, payload, maxPromptBytes, () => true)!;
}

/**
 * `expandTemplate` for a flat template (`isFlatTemplate`), whose expansion takes time linear in the template and the
 * prompt, so it may run on any thread; undefined for any other, having only parsed it.
 */
export function expandFlatTemplate(template: string, payload: Record<string, unknown>, maxPromptBytes: number): Expanded | undefined {
  return expand(template, payload, maxPromptBytes, isFlat);
}

/** Parses once, and expands when `accepted` says so of the tokens. */
function expand(template: string, payload: Record<string, unknown>, maxPromptBytes: number, accepted: (tokens: Token[]) => boolean): Expanded | undefined {
  // A writer per call: Mustache's default writer keeps every template it ever parsed. Its own cache makes `render`
  // reuse the tokens `parse` made.
  const writer = new BoundedWriter(maxPromptBytes);
  try {
    const tokens = writer.parse(template) as Token[];
    if (!accepted(tokens)) return undefined;
    const view = { ...payload, '@payload': JSON.stringify(payload) };
    // The walk first, as Mustache's lookup may change the payload: it calls the inherited methods it finds (`{{#reverse}}`).
    const missing = missingPlaceholders(tokens, view);
    // No partials: a prototype-less map, so `{{> constructor}}` finds nothing instead of an inherited function.
    return { prompt: writer.render(template, view, Object.create(null) as Record<string, string>, RAW), missing };
  } catch (err) {
    if (err instanceof TemplateFailure) throw err;
    throw new TemplateFailure('invalid', (err as Error).message);
  }
}

/** What a flat template is made of: text, placeholders (escaped or not), comments and delimiter changes. */
const FLAT_TOKENS = new Set(['text', 'name', '&', '!', '=']);
const isFlat = (tokens: Token[]) => tokens.every(([type]) => FLAT_TOKENS.has(type));

/**
 * Whether a template is flat: no sections, inverted sections or partials. Expanding a flat template takes time linear
 * in the template and in the prompt (whose size is bounded), with no list to repeat anything over, so it needs no
 * thread where a time limit can stop it (sandbox.ts). False for a template Mustache cannot parse.
 */
export function isFlatTemplate(template: string): boolean {
  try {
    return isFlat(new Mustache.Writer().parse(template) as Token[]);
  } catch {
    return false;
  }
}

/** Walks the token tree the way Mustache renders it: only what is rendered is checked. */
function missingPlaceholders(tokens: Token[], view: Record<string, unknown>): string[] {
  const missing = new Set<string>();
  const walk = (tokens: Token[], context: unknown[]) => {
    for (const token of tokens) {
      const [type, name] = token;
      if (type === 'name' || type === '&') {
        if (name !== '.' && lookup(name, context) === undefined) missing.add(name);
      } else if ((type === '#' || type === '^') && token[4]) {
        // A list's section once per item, with the item in context.
        const value = lookup(name, context);
        const empty = !value || (Array.isArray(value) && value.length === 0);
        if (type === '^') {
          if (empty) walk(token[4], context);
        } else if (value === undefined) missing.add(name);
        else if (Array.isArray(value)) for (const item of value) walk(token[4], [item, ...context]);
        else if (!empty) walk(token[4], typeof value === 'object' ? [value, ...context] : context);
      }
    }
  };
  walk(tokens, [view]);
  return [...missing];
}

function lookup(name: string, context: unknown[]): unknown {
  for (const frame of context) {
    let value: unknown = frame;
    for (const part of name === '@payload' ? [name] : name.split('.')) {
      value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
    }
    if (value !== undefined) return value;
  }
  return undefined;
}
