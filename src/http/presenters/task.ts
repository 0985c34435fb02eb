import { z } from 'zod';
import { RUNNERS, taskInputSchema, type Runner, type TaskRecord } from '../../store/tasks';
import { presentWebhook } from '../../store/webhooks';
import { timestamp } from './timestamp';

const runnerView = z.object({ prompt: z.string(), model: z.string(), max_tokens: z.number().int().positive().optional() });
type RunnerView = z.infer<typeof runnerView>;

/** A task as every read shows it (the OpenAPI document's `Task`). */
export const taskView = z
  .object({
    name: z.string(),
    slug: z.string().meta({ description: '`<user>/<profile>/<task>`' }),
    runner: z.enum(RUNNERS),
    openai: runnerView.optional().meta({ description: 'Present when `runner` is `openai`' }),
    anthropic: runnerView.optional().meta({ description: 'Present when `runner` is `anthropic`' }),
    provider: z.enum(RUNNERS).meta({ description: '`runner` again, for the Python client' }),
    prompt: z.string(),
    settings: z.object({
      key_set: z.boolean().meta({ description: 'Whether the task has its own key (never shown)' }),
      priority: z.number().int().optional().meta({ description: 'Present when the task sets its runs\' priority (1 highest to 5 lowest; 3 when absent)' }),
    }),
    limits: z
      .object({ max_turns: z.number().int().optional(), timeout_s: z.number().int().optional(), max_total_tokens: z.number().int().optional() })
      .optional()
      .meta({ description: 'Present when the task has limits of its own' }),
    webhook: z
      .object({
        url: z.string(),
        secret_set: z.literal(true),
        secret: z.string().optional().meta({ description: 'Only in the answer of the save that made it' }),
      })
      .optional()
      .meta({ description: 'Present when the task has a completion webhook (docs/webhooks.md)' }),
    description: z.string().optional().meta({ description: 'Present when the task has one (its MCP tool\'s description)' }),
    input_schema: z.record(z.string(), z.unknown()).optional().meta({ description: 'Present when the task declares one (its MCP tool\'s `inputSchema`)' }),
    created_at: timestamp,
    modified_at: timestamp,
  })
  .meta({ id: 'Task' });
export type TaskView = z.infer<typeof taskView>;

/**
 * A stored task as every read returns it (compat.md, "Task"): the contract's runner object plus the `provider` and
 * `prompt` fields the Python client reads. `settings` says whether the task has its own key and never shows it.
 */
export function presentTask(task: TaskRecord): TaskView {
  const runnerObject: RunnerView = { prompt: task.prompt, model: task.model };
  if (task.max_tokens) runnerObject.max_tokens = task.max_tokens;
  const byRunner: Partial<Record<Runner, RunnerView>> = { [task.runner]: runnerObject };
  return {
    name: task.name,
    slug: `${task.owner}/${task.profile}/${task.name}`,
    runner: task.runner,
    ...byRunner,
    provider: task.runner,
    prompt: task.prompt,
    // `priority` shown when set (an addition: tasks without one read as before).
    settings: { key_set: task.key !== null && task.key !== undefined, ...(task.priority ? { priority: task.priority } : {}) },
    // Shown when the task has limits of its own (an addition: tasks without them read as before).
    ...(task.limits && Object.keys(task.limits).length > 0 ? { limits: task.limits } : {}),
    // `{ url, secret_set: true }` when the task has a completion webhook (docs/webhooks.md); never the secret.
    ...(task.webhook ? { webhook: presentWebhook(task.webhook) } : {}),
    // Shown when set (additions: tasks without them read as before).
    ...(task.description ? { description: task.description } : {}),
    ...(task.input_schema_json ? { input_schema: taskInputSchema(task)! } : {}),
    created_at: task.created_at.toISOString(),
    modified_at: task.modified_at.toISOString(),
  };
}
