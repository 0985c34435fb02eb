import Mustache from 'mustache';
import { BoundedWriter } from './bounded-writer';
import { TemplateFailure } from './failure';

/**
 * Mustache without HTML escaping: a prompt is not HTML, so `&`, `<` and quotes pass through unchanged. An object
 * placeholder expands to its JSON rather than "[object Object]".
 */
const RAW = { escape: (value: unknown) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)) };

type Token = [string, string, number, number, Token[]?, number?];

/**
 * Expands `{{ name }}`, dotted paths `{{ a.b }}` and `{{ @payload }}` (the whole payload as JSON). Returns the
 * placeholders that had no value: they expand to empty, and the run logs a warning naming each.
 *
 * Its time grows exponentially with the nesting of list sections and nothing here can stop it: the worker calls it
 * only in a thread of the sandbox (sandbox.ts). Throws TemplateFailure: `invalid` with Mustache's own message (or
 * the error rendering met), `too_large` as soon as the prompt passes `maxPromptBytes` (UTF-8).
 */
export function expandTemplate(template: string, payload: Record<string, unknown>, maxPromptBytes = Infinity): { prompt: string; missing: string[] } {
  const view = { ...payload, '@payload': JSON.stringify(payload) };
  // A writer per call: Mustache's default writer keeps every template it ever parsed.
  const writer = new BoundedWriter(maxPromptBytes);
  try {
    // The walk first, as Mustache's lookup may change the payload: it calls the inherited methods it finds (`{{#reverse}}`).
    const missing = missingPlaceholders(writer.parse(template) as Token[], view);
    // No partials: a prototype-less map, so `{{> constructor}}` finds nothing instead of an inherited function.
    return { prompt: writer.render(template, view, Object.create(null) as Record<string, string>, RAW), missing };
  } catch (err) {
    if (err instanceof TemplateFailure) throw err;
    throw new TemplateFailure('invalid', (err as Error).message);
  }
}

/** What a flat template is made of: text, placeholders (escaped or not), comments and delimiter changes. */
const FLAT_TOKENS = new Set(['text', 'name', '&', '!', '=']);

/**
 * Whether a template is flat: no sections, inverted sections or partials. Expanding a flat template takes time linear
 * in the template and in the prompt (whose size is bounded), with no list to repeat anything over, so it needs no
 * thread where a time limit can stop it (sandbox.ts). False for a template Mustache cannot parse.
 */
export function isFlatTemplate(template: string): boolean {
  try {
    // A writer of its own: Mustache's default one keeps every template it ever parsed.
    return (new Mustache.Writer().parse(template) as Token[]).every(([type]) => FLAT_TOKENS.has(type));
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
