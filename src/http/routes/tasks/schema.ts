import Mustache from 'mustache';
import { z } from 'zod';
import type { Config } from '../../../config';
import { badRequest } from '../../../errors';
import { nameSchema } from '../../../store/names';
import { RUNNERS, type KeyChange, type Runner, type TaskLimits, type TaskSpec } from '../../../store/tasks';
import { isWebhookSecret, WEBHOOK_SECRET_RULE, type WebhookChange } from '../../../store/webhooks';
import { parse } from '../../validate';
import { jsonSchemaProblem } from '../../../json-schema';
import { TASK_PRIORITY } from '../../../runs/priority';

/**
 * Task bodies. Two forms, both with unknown fields ignored:
 * - contract: `{ runner, <runner>: { prompt, model, max_tokens? }, settings?: { key? } }`
 * - short (the Python client's create_task): `{ provider, prompt, model?, max_tokens?, settings? }`
 * Variant A takes runner `openai` with the one configured model only.
 */

export const MODEL_MAX_LENGTH = 200;
export const KEY_MAX_LENGTH = 1000;

export const taskParams = z.object({ profile: nameSchema, task: nameSchema });
export const profileParams = z.object({ profile: nameSchema });

/** `?deprecated=true`: only the tasks whose model has an announced end of life (src/model-deprecations.ts). */
export const listQuery = z.object({
  deprecated: z.enum(['true', 'false'], { error: 'expected "true" or "false"' }).optional().meta({ description: '`true`: only the tasks on a model with an announced end of life' }),
});

/** A save's answer carries these beside the task when its model is deprecated; no `warnings` key otherwise. */
export const taskWarning = z
  .object({
    code: z.literal('model_deprecated'),
    field: z.string().meta({ description: '`openai.model` or `anthropic.model`' }),
    end_of_life: z.iso.date().meta({ description: 'The day the provider stops serving the model' }),
    message: z.string(),
  })
  .meta({ id: 'TaskWarning' });
export type TaskWarning = z.infer<typeof taskWarning>;

const runnerEnum = (runners: readonly Runner[]) =>
  z.enum(runners as [Runner, ...Runner[]], { error: `expected ${runners.map((r) => `"${r}"`).join(' or ')}` });

const maxTokens = z.number().int().positive().max(1_000_000).optional();
const model = z.string().min(1).max(MODEL_MAX_LENGTH);

/**
 * A key copied from an example rather than a provider: `sk-...`, `sk-…`, `<your key>`, `your-api-key`. Stored, it
 * would override the operator's key and fail every run with a 401 from the provider.
 */
export function isPlaceholderKey(key: string): boolean {
  return key.includes('...') || key.includes('…') || /^\s*<.*>\s*$/s.test(key) || /your.*key/is.test(key);
}
const PLACEHOLDER_KEY = 'a placeholder from an example, not a provider key: set your own key, or leave settings.key out to use the server\'s';

const PRIORITY_RULE = `expected a whole number from ${TASK_PRIORITY.highest} (highest) to ${TASK_PRIORITY.lowest} (lowest)`;

/**
 * `key`: a string sets it, null drops it, absent keeps the stored one (store/tasks.ts KeyChange). `priority`: its runs'
 * priority (src/runs/priority.ts), saved with the task like `limits`: absent or null is the default, 3.
 */
const settings = z
  .object({
    key: z.string().min(1).max(KEY_MAX_LENGTH).refine((key) => !isPlaceholderKey(key), { error: PLACEHOLDER_KEY }).nullable().optional(),
    priority: z
      .int({ error: PRIORITY_RULE })
      .min(TASK_PRIORITY.highest, { error: PRIORITY_RULE })
      .max(TASK_PRIORITY.lowest, { error: PRIORITY_RULE })
      .nullable()
      .optional()
      .meta({ description: `Its runs' priority when the service is busy: ${TASK_PRIORITY.highest} highest to ${TASK_PRIORITY.lowest} lowest, ${TASK_PRIORITY.default} when absent; runs a schedule starts go one lower (docs/fairness.md)` }),
  })
  .nullable()
  .optional();

export const WEBHOOK_URL_MAX_LENGTH = 2048;
const isHttpUrl = (value: string) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);

/** `webhook` (docs/webhooks.md): an object sets it, null removes it, absent keeps the stored one (as `settings.key`). */
const webhook = z
  .object({
    url: z.string().max(WEBHOOK_URL_MAX_LENGTH).refine(isHttpUrl, { error: 'expected an http or https URL' }),
    secret: z.string().refine(isWebhookSecret, { error: `expected ${WEBHOOK_SECRET_RULE}` }).optional(),
  })
  .nullable()
  .optional();

export const runnerObject = z.object({ prompt: z.string().min(1), model, max_tokens: maxTokens });
export type RunnerObject = z.infer<typeof runnerObject>;

export const contractHead = (runners: readonly Runner[]) => z.object({ runner: runnerEnum(runners), settings, webhook });
export const shortForm = (runners: readonly Runner[]) =>
  z.object({ provider: runnerEnum(runners), prompt: z.string().min(1), model: model.optional(), max_tokens: maxTokens, settings, webhook });

export type ContractTaskBody = z.infer<ReturnType<typeof contractHead>> & Partial<Record<Runner, RunnerObject>>;
export type ShortTaskBody = z.infer<ReturnType<typeof shortForm>>;

export interface TaskInput {
  spec: TaskSpec;
  key: KeyChange;
  webhook: WebhookChange;
}

export type Variant = 'A' | 'B';
type TaskBodyConfig = Pick<
  Config,
  'VARIANT_A_MODEL' | 'OPENAI_DEFAULT_MODEL' | 'ANTHROPIC_DEFAULT_MODEL' | 'TEMPLATE_MAX_BYTES' | 'TEMPLATE_MAX_DEPTH' | 'RUN_MAX_TURNS' | 'RUN_TIMEOUT_MS' | 'RUN_MAX_TOTAL_TOKENS'
>;

/** Fields of the runner object a body may put in `limits` by mistake. */
const RUNNER_FIELDS = new Set(Object.keys(runnerObject.shape));

/** `limits: unknown field "max_tokens"; max_tokens belongs in openai.max_tokens` (the body's runner, when known). */
function limitsKeysMessage(keys: readonly PropertyKey[], runner: Runner | undefined): string {
  const names = keys.map(String);
  const unknown = `unknown field${names.length === 1 ? '' : 's'} ${names.map((k) => `"${k}"`).join(', ')}`;
  const misplaced = names.filter((k) => RUNNER_FIELDS.has(k));
  if (misplaced.length === 0) return `${unknown}; limits takes max_turns, timeout_s and max_total_tokens`;
  const where = (k: string) => (runner ? `${runner}.${k}` : RUNNERS.map((r) => `${r}.${k}`).join(' or '));
  return `${unknown}; ${misplaced.map((k) => `${k} belongs in ${where(k)}`).join(', ')}`;
}

/** `limits`, each within the server's ceiling: over one is a 400 naming the field and the ceiling. */
export const limitsSchema = (config: TaskBodyConfig, runner?: Runner) => {
  const timeoutCeiling = Math.floor(config.RUN_TIMEOUT_MS / 1000);
  const tokens = z.number().int().positive();
  return z
    .strictObject(
      {
        max_turns: z.number().int().positive().max(config.RUN_MAX_TURNS, { error: `at most ${config.RUN_MAX_TURNS}, this server's RUN_MAX_TURNS` }).optional(),
        timeout_s: z.number().int().positive().max(timeoutCeiling, { error: `at most ${timeoutCeiling} s, this server's RUN_TIMEOUT_MS` }).optional(),
        max_total_tokens: (config.RUN_MAX_TOTAL_TOKENS ? tokens.max(config.RUN_MAX_TOTAL_TOKENS, { error: `at most ${config.RUN_MAX_TOTAL_TOKENS}, this server's RUN_MAX_TOTAL_TOKENS` }) : tokens).optional(),
      },
      { error: (issue) => (issue.code === 'unrecognized_keys' ? limitsKeysMessage(issue.keys, runner) : undefined) },
    )
    .nullable()
    .optional();
};

/** The task's limits from a body (`limits`), null when it sets none. */
function parseLimits(body: Record<string, unknown>, config: TaskBodyConfig, runner: Runner): TaskLimits | null {
  const limits = parse(limitsSchema(config, runner), body.limits, 'limits');
  if (!limits) return null;
  const set = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) as TaskLimits;
  return Object.keys(set).length > 0 ? set : null;
}
export const DESCRIPTION_MAX_LENGTH = 2000;
export const INPUT_SCHEMA_MAX_BYTES = 64 * 1024;

/** `description` and `input_schema` (docs/mcp.md, "Your tasks as MCP tools"): optional in both forms and variants. */
export const taskExtras = z.object({
  description: z.string().max(DESCRIPTION_MAX_LENGTH).nullable().optional(),
  input_schema: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .superRefine((schema, ctx) => {
      if (!schema) return;
      const bytes = Buffer.byteLength(JSON.stringify(schema));
      const problem = bytes > INPUT_SCHEMA_MAX_BYTES ? `${bytes} bytes; the limit is ${INPUT_SCHEMA_MAX_BYTES}` : jsonSchemaProblem(schema);
      if (problem) ctx.addIssue({ code: 'custom', message: `not a JSON Schema 2020-12 for tool arguments: ${problem}` });
    })
    .meta({ description: 'JSON Schema 2020-12 of the trigger data (an object schema): its MCP tool\'s `inputSchema`' }),
});

/** The task's description and input schema from a body (null when it sets none), each checked. */
function parseExtras(body: Record<string, unknown>): Pick<TaskSpec, 'description' | 'input_schema_json'> {
  const extras = parse(taskExtras, { description: body.description, input_schema: body.input_schema });
  return { description: extras.description || null, input_schema_json: extras.input_schema ? JSON.stringify(extras.input_schema) : null };
}

type TemplateLimits = Pick<TaskBodyConfig, 'TEMPLATE_MAX_BYTES' | 'TEMPLATE_MAX_DEPTH'>;

/** Throws a 400 naming the field: `runner`, `openai.model`, `anthropic.prompt`, `settings.key`, ... */
export function parseTaskBody(body: Record<string, unknown>, variant: Variant, config: TaskBodyConfig): TaskInput {
  const runners: readonly Runner[] = variant === 'A' ? ['openai'] : RUNNERS;
  if (!('runner' in body) && 'provider' in body) return parseShortForm(body, runners, variant, config);

  const head = parse(contractHead(runners), body);
  const raw = body[head.runner];
  if (raw === undefined || raw === null) {
    throw badRequest(`${head.runner}: required, an object { prompt, model } keyed by the runner value "${head.runner}"`);
  }
  const obj = parse(runnerObject, raw, head.runner);
  if (variant === 'A') requireVariantAModel(obj.model, `${head.runner}.model`, config);
  checkTemplate(obj.prompt, `${head.runner}.prompt`, config);
  return {
    spec: {
      runner: head.runner,
      model: obj.model,
      prompt: obj.prompt,
      max_tokens: obj.max_tokens ?? null,
      limits: parseLimits(body, config, head.runner),
      priority: head.settings?.priority ?? null,
      ...parseExtras(body),
    },
    key: head.settings?.key,
    webhook: head.webhook,
  };
}

function parseShortForm(body: Record<string, unknown>, runners: readonly Runner[], variant: Variant, config: TaskBodyConfig): TaskInput {
  const b = parse(shortForm(runners), body);
  const defaultModel = variant === 'A' ? config.VARIANT_A_MODEL : b.provider === 'openai' ? config.OPENAI_DEFAULT_MODEL : config.ANTHROPIC_DEFAULT_MODEL;
  const chosen = b.model ?? defaultModel;
  if (variant === 'A') requireVariantAModel(chosen, 'model', config);
  checkTemplate(b.prompt, 'prompt', config);
  return {
    spec: {
      runner: b.provider,
      model: chosen,
      prompt: b.prompt,
      max_tokens: b.max_tokens ?? null,
      limits: parseLimits(body, config, b.provider),
      priority: b.settings?.priority ?? null,
      ...parseExtras(body),
    },
    key: b.settings?.key,
    webhook: b.webhook,
  };
}

function requireVariantAModel(value: string, field: string, config: TaskBodyConfig) {
  if (value !== config.VARIANT_A_MODEL) {
    throw badRequest(`${field}: this path (Variant A) accepts only the model "${config.VARIANT_A_MODEL}"; use /api/tasks/~/<profile>/<task> for others`);
  }
}

/**
 * Throws 400 `invalid_template` naming the field: a template over TEMPLATE_MAX_BYTES, one Mustache cannot parse (its
 * reason, and where: line and column), or one whose sections nest deeper than TEMPLATE_MAX_DEPTH (rendering time
 * grows exponentially with the nesting of list sections).
 */
export function checkTemplate(template: string, field: string, limits: TemplateLimits) {
  const bytes = Buffer.byteLength(template);
  if (bytes > limits.TEMPLATE_MAX_BYTES) {
    throw badRequest(`${field}: the template is ${bytes} bytes; the limit is ${limits.TEMPLATE_MAX_BYTES} (TEMPLATE_MAX_BYTES)`, 'invalid_template');
  }
  let tokens: Token[];
  try {
    // A fresh Writer: Mustache.parse would keep every template ever saved in its global cache.
    tokens = new Mustache.Writer().parse(template);
  } catch (err) {
    const message = (err as Error).message;
    const at = /\bat (\d+)$/.exec(message);
    let where = '';
    if (at) {
      const before = template.slice(0, Number(at[1]));
      const line = before.split('\n').length;
      where = ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
    }
    throw badRequest(`${field}: not a valid Mustache template: ${message}${where}`, 'invalid_template');
  }
  const depth = sectionDepth(tokens);
  if (depth > limits.TEMPLATE_MAX_DEPTH) {
    throw badRequest(`${field}: sections are nested ${depth} deep; the limit is ${limits.TEMPLATE_MAX_DEPTH} (TEMPLATE_MAX_DEPTH)`, 'invalid_template');
  }
}

/** A token of Mustache's parse tree: a section (`#`, `^`) holds its own tokens at 4. */
type Token = [type: string, value: string, start: number, end: number, ...rest: unknown[]];

/** The deepest nesting of sections, without recursion: Mustache parses any depth (100,000 and more). */
function sectionDepth(tokens: Token[]): number {
  let deepest = 0;
  const pending: Array<[Token[], number]> = [[tokens, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [level, depth] = next;
    deepest = Math.max(deepest, depth);
    for (const token of level) if (token[0] === '#' || token[0] === '^') pending.push([token[4] as Token[], depth + 1]);
  }
  return deepest;
}
