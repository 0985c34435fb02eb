import { z } from 'zod';
import { badRequest } from '../../../errors';
import { nameSchema } from '../../../store/names';
import type { RunStatus } from '../../../contract/types';
import { RUNNERS } from '../../../contract/constants';

/** Variant A trigger body: trigger data is a flat map of string to string. */
export const variantATrigger = z.object({
  parameters: z.record(z.string(), z.string({ error: 'expected a string (Variant A takes a flat map of string to string)' })).default({}),
});
export type VariantATrigger = z.infer<typeof variantATrigger>;

/**
 * Variant A's parameters as sent: zod leaves a `__proto__` key out of a record, but trigger data keeps it as data
 * like any other key (an own property, as JSON.parse made it, never a prototype). `parsed`: what the schema made of
 * `body.parameters`. Throws a 400 naming `parameters.__proto__` when its value is not a string.
 */
export function withProtoKey(body: unknown, parsed: Record<string, string>): Record<string, string> {
  const sent = (body as { parameters?: unknown } | null)?.parameters;
  if (sent === undefined || sent === null || typeof sent !== 'object' || !Object.hasOwn(sent, '__proto__')) return parsed;
  const value = (sent as Record<string, unknown>)['__proto__'];
  if (typeof value !== 'string') throw badRequest('parameters.__proto__: expected a string (Variant A takes a flat map of string to string)');
  return sent as Record<string, string>;
}

/** A Variant A trigger's parameters (see `withProtoKey`). */
export const variantAParameters = (body: unknown) => withProtoKey(body, variantATrigger.parse(body).parameters);

/** The `run-id` header of a signed trigger. */
export const runIdHeader = nameSchema.optional();

export const runName = nameSchema;

const RUN_STATUSES = ['pending', 'running', 'ready', 'error'] as const satisfies readonly RunStatus[];
const oneStatus = `(${RUN_STATUSES.join('|')})`;

/** `?status=` of a run list: one status, or several separated by commas. */
export const runListQuery = z.object({
  status: z
    .string({ error: 'expected one status, or several separated by commas (given once)' })
    .regex(new RegExp(`^${oneStatus}(,${oneStatus})*$`), { error: `expected ${RUN_STATUSES.join(', ')}, or several of them separated by commas` })
    .optional()
    .meta({ description: 'Only the runs in this status (as the list shows it), or in any of several separated by commas: `pending`, `running`, `ready`, `error`' }),
  replays: z.enum(['true', 'false'], { error: 'expected true or false' }).optional().meta({ description: '`false` leaves out replays (runs with `replay_of`, docs/replays.md)' }),
});

/** The statuses a parsed `?status=` asks for, or undefined for all. */
export const statusesOf = (query: z.infer<typeof runListQuery>): RunStatus[] | undefined =>
  query.status === undefined ? undefined : ([...new Set(query.status.split(','))] as RunStatus[]);

export const revokeBody = z.object({ url: z.string().min(1).max(4000) });

/** `POST <run path>/approvals/:id`: the decision on a tool call waiting for approval. */
export const approvalBody = z.object({
  approve: z.boolean({ error: 'expected true (run the call) or false (the model gets "denied: <reason>")' }),
  reason: z.string().max(2000).optional(),
});
export type ApprovalBody = z.infer<typeof approvalBody>;

/** An approval's id, as the run's approval entry gives it (a UUID). */
export const approvalId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { error: 'expected the id of an approval entry' });

/** A value of an answer's `content`: what an MCP form question takes (a string, a number, a boolean, a list of strings). */
const inputValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())], { error: 'expected a string, a number, a boolean or an array of strings' });

/** `POST <run path>/inputs/:id`: the answer to a question an MCP server asked during the run (docs/mcp.md, "Inputs"). */
export const inputBody = z
  .object({
    action: z.enum(['accept', 'decline', 'cancel'], { error: 'expected "accept" (with content that fits the schema), "decline" or "cancel"' }),
    content: z.record(z.string(), inputValue).optional(),
  })
  .refine((body) => body.action === 'accept' || body.content === undefined, { path: ['content'], error: 'only an "accept" carries content' });
export type InputBody = z.infer<typeof inputBody>;

/** An input's id, as the run's input entry gives it (a UUID). */
export const inputId = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, { error: 'expected the id of an input entry' });

/** `POST <run path>/replays` (docs/replays.md): what the replay changes, and where its tool results come from. */
export const replayBody = z
  .object({
    name: nameSchema.optional().meta({ description: 'The replay\'s run name; default `<run>.r<n>`' }),
    runner: z.enum(RUNNERS).optional().meta({ description: 'Another provider (then `model` too); the task or the server must have a key for it' }),
    model: z.string().min(1).max(200).optional(),
    prompt: z.string().optional().meta({ description: 'A prompt template used instead of the task version\'s' }),
    task_version: z.number().int().positive().optional().meta({ description: 'Another version of the task (default: the original\'s)' }),
    tools: z.enum(['recorded', 'live', 'recorded_then_live']).default('recorded_then_live').meta({ description: 'Where tool calls get their results (docs/replays.md, "Modes")' }),
  });
export type ReplayBody = z.infer<typeof replayBody>;
