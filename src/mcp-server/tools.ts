import Mustache from 'mustache';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { taskInputSchema, type TaskRecord } from '../store/tasks';

/** A JSON Schema object, as a tool's `inputSchema` holds one. */
type Schema = { type?: 'object' | 'string'; properties?: Record<string, Schema>; required?: string[]; additionalProperties?: boolean } & Record<string, unknown>;

/** A token of Mustache's parse tree: a section (`#`, `^`) holds its own tokens at 4. */
type Token = [type: string, value: string, start: number, end: number, ...rest: unknown[]];

const DESCRIPTION_PROMPT_CHARS = 300;

/**
 * A task's name as a tool's: task names (letters, digits, `_`, `-`, `.`, at most 64: store/names.ts) are already within
 * MCP's tool names (the same characters, at most 128), so the mapping is the name itself, both ways.
 */
export const toolName = (task: string) => task;

/** The task a tool name calls (see toolName). */
export const taskName = (tool: string) => tool;

type ToolTask = Pick<TaskRecord, 'name' | 'runner' | 'model' | 'prompt' | 'description' | 'input_schema_json'>;

/** A task as an MCP tool: its own description and input schema, else ones made from its runner, model and prompt. */
export function toolOf(task: ToolTask): Tool {
  return {
    name: toolName(task.name),
    title: task.name,
    description: task.description || describeTask(task),
    inputSchema: inputSchemaOf(task) as Tool['inputSchema'],
    execution: { taskSupport: 'optional' },
    // What is known of any task: it changes things (runs, tool calls) and reaches the open world (a model, tools).
    annotations: { title: task.name, readOnlyHint: false, openWorldHint: true },
  };
}

/** The input schema of a task's tool: the one it declares (`input_schema`), else the one its placeholders make. */
export const inputSchemaOf = (task: Pick<ToolTask, 'prompt' | 'input_schema_json'>): object => taskInputSchema(task) ?? placeholderSchema(task.prompt);

/** A summary of the task: its runner, model and the start of its prompt. */
export function describeTask(task: Pick<TaskRecord, 'runner' | 'model' | 'prompt'>): string {
  const prompt = task.prompt.length > DESCRIPTION_PROMPT_CHARS ? `${task.prompt.slice(0, DESCRIPTION_PROMPT_CHARS)}…` : task.prompt;
  return `Runs the prompt task on ${task.runner} (${task.model}). Prompt: ${prompt}`;
}

/**
 * The arguments a template's placeholders ask for: `{{ x }}` a required string, `{{ a.b }}` a required object `a`
 * with a required string `b`, a section `{{#x}}`/`{{^x}}` an optional value of any type (what is inside a section
 * may come from the section's value: not asked for), `{{ @payload }}` (the whole payload) leaves the object open to
 * any other property. A template Mustache cannot parse (checked when it was saved) asks for an open object.
 */
export function placeholderSchema(template: string): Schema {
  const root: Schema = { type: 'object', properties: {}, required: [], additionalProperties: false };
  let tokens: Token[];
  try {
    tokens = new Mustache.Writer().parse(template) as Token[];
  } catch {
    return { type: 'object', additionalProperties: true };
  }
  for (const [type, value] of tokens) {
    if (type === 'name' || type === '&') add(root, value, true);
    else if (type === '#' || type === '^') add(root, value, false);
  }
  return tidy(root);
}

function add(root: Schema, name: string, required: boolean) {
  if (name === '@payload') {
    root.additionalProperties = true;
    return;
  }
  if (name === '.' || name === '') return;
  const path = name.split('.');
  let at = root;
  for (const [i, part] of path.entries()) {
    const last = i === path.length - 1;
    at.properties ??= {};
    at.required ??= [];
    let next = at.properties[part];
    if (!next || (!last && next.type !== 'object')) {
      next = last ? (required ? { type: 'string' } : {}) : { type: 'object', properties: {}, required: [] };
      // A placeholder and a section of the same name: the section (any type) wins, still required by the placeholder.
      if (at.properties[part] && !required) next = {};
      at.properties[part] = next;
    } else if (last && !required) {
      at.properties[part] = {};
    }
    if (required && !at.required.includes(part)) at.required.push(part);
    at = at.properties[part]!;
  }
}

/** Drops empty `required` lists (JSON Schema allows them, some clients do not). */
function tidy(schema: Schema): Schema {
  if (schema.properties) for (const child of Object.values(schema.properties)) tidy(child);
  if (schema.required && schema.required.length === 0) delete schema.required;
  return schema;
}
