import Mustache from 'mustache';

/** Mustache token kinds that name a value: `{{x}}`, `{{{x}}}`/`{{&x}}`, `{{#x}}`, `{{^x}}`. */
const NAMED = new Set(['name', '&', '#', '^']);

type Token = [kind: string, value: string, start: number, end: number, children?: Token[]];

/** The names a template uses, in order of first use (inside sections too); undefined when it does not parse. */
export function placeholders(template: string): string[] | undefined {
  let tokens: Token[];
  try {
    tokens = Mustache.parse(template) as unknown as Token[];
  } catch {
    return undefined;
  }
  const names: string[] = [];
  const visit = (list: Token[]) => {
    for (const token of list) {
      if (NAMED.has(token[0]) && token[1] !== '.' && token[1] !== '@payload' && !names.includes(token[1])) names.push(token[1]);
      if (token[4]) visit(token[4]);
    }
  };
  visit(tokens);
  return names;
}

/** As the worker expands (activities/template/expand.ts): no HTML escaping, an object as its JSON. */
const RAW = { escape: (value: unknown) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)) };

/** The template rendered with `values` as the worker would (`{{@payload}}` the whole data), or the parse error. */
export function preview(template: string, values: Record<string, unknown>): { text: string } | { error: string } {
  try {
    return { text: Mustache.render(template, { ...values, '@payload': values }, {}, RAW) };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

/** `{"topic": ""}` for a template using `{{topic}}`: the start of a trigger's JSON. */
export function sampleData(names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((n) => !n.includes('.')).map((n) => [n, '']));
}
