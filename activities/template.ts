import Mustache from 'mustache';

/**
 * Mustache without HTML escaping: a prompt is not HTML, so `&`, `<` and quotes pass through unchanged. An object
 * placeholder expands to its JSON rather than "[object Object]".
 */
const RAW = { escape: (value: unknown) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)) };

type Token = [string, string, number, number, Token[]?, number?];

/** Throws Mustache's own message (which says where) when the template cannot be parsed. */
export function checkTemplate(template: string): void {
  Mustache.parse(template);
}

/**
 * Expands `{{ name }}`, dotted paths `{{ a.b }}` and `{{ @payload }}` (the whole payload as JSON). Returns the
 * placeholders that had no value: they expand to empty, and the run logs a warning naming each.
 */
export function expandTemplate(template: string, payload: Record<string, unknown>): { prompt: string; missing: string[] } {
  const view = { ...payload, '@payload': JSON.stringify(payload) };
  const missing = new Set<string>();
  const walk = (tokens: Token[], context: unknown[]) => {
    for (const token of tokens) {
      const [type, name] = token;
      if (type === 'name' || type === '&') {
        if (name !== '.' && lookup(name, context) === undefined) missing.add(name);
      } else if ((type === '#' || type === '^') && token[4]) {
        // Only what Mustache renders is checked: a list's section once per item, with the item in context.
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
  walk(Mustache.parse(template) as unknown as Token[], [view]);
  return { prompt: Mustache.render(template, view, {}, RAW), missing: [...missing] };
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
