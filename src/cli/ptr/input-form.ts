/**
 * An MCP server's form question (elicitation's requested schema: a flat object of strings, numbers, booleans and
 * enums) as a person reads it on a terminal: its fields, and an `--accept` answer to edit.
 */

interface FieldSchema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  oneOf?: Array<{ const?: unknown }>;
  anyOf?: Array<{ const?: unknown }>;
  format?: string;
  /** A multiple choice: its choices. */
  items?: FieldSchema;
}

const fieldsOf = (schema: unknown): Array<[string, FieldSchema]> => {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  return properties && typeof properties === 'object' ? Object.entries(properties as Record<string, FieldSchema>) : [];
};

const requiredOf = (schema: unknown): Set<string> => {
  const required = (schema as { required?: unknown } | undefined)?.required;
  return new Set(Array.isArray(required) ? required.filter((r): r is string => typeof r === 'string') : []);
};

/** The values a field (or each item of a multiple choice) may take, when it lists them (`enum`, or `const`s). */
const choicesOf = (field: FieldSchema): unknown[] | undefined => {
  const listed = field.enum ?? (field.oneOf ?? field.anyOf)?.map((o) => o.const);
  if (Array.isArray(listed)) return listed;
  return field.type === 'array' && field.items ? choicesOf(field.items) : undefined;
};

/** One line per field: `name (string, required): description; one of …; default …`. */
export function formFieldLines(schema: unknown): string[] {
  const required = requiredOf(schema);
  return fieldsOf(schema).map(([name, field]) => {
    const kind = [field.type ?? 'any', field.format].filter(Boolean).join(' ');
    const notes = [field.description ?? field.title];
    const choices = choicesOf(field);
    if (choices) notes.push(`${field.type === 'array' ? 'any of' : 'one of'} ${choices.map((c) => JSON.stringify(c)).join(', ')}`);
    if (field.default !== undefined) notes.push(`default ${JSON.stringify(field.default)}`);
    const said = notes.filter(Boolean).join('; ');
    return `${name} (${kind}${required.has(name) ? ', required' : ''})${said ? `: ${said}` : ''}`;
  });
}

/** An answer to edit: each required field with its default, its first choice, or a placeholder (`<name>`) or value of its type. */
export function exampleAnswer(schema: unknown): string {
  const required = requiredOf(schema);
  const answer: Record<string, unknown> = {};
  for (const [name, field] of fieldsOf(schema)) {
    if (!required.has(name)) continue;
    const choices = choicesOf(field);
    const first = field.type === 'array' ? (choices ? [choices[0]] : []) : choices?.[0];
    answer[name] = field.default ?? first ?? (field.type === 'boolean' ? false : field.type === 'number' || field.type === 'integer' ? 0 : `<${name}>`);
  }
  return JSON.stringify(answer);
}
