import type { TaskRecord } from '../../store/tasks';
import { presentWebhook } from '../../store/webhooks';

/**
 * A stored task as every read returns it (compat.md, "Task"): the contract's runner object plus the `provider` and
 * `prompt` fields the Python client reads. `settings` says whether the task has its own key and never shows it.
 */
export function presentTask(task: TaskRecord) {
  const runnerObject: { prompt: string; model: string; max_tokens?: number } = { prompt: task.prompt, model: task.model };
  if (task.max_tokens) runnerObject.max_tokens = task.max_tokens;
  return {
    name: task.name,
    slug: `${task.owner}/${task.profile}/${task.name}`,
    runner: task.runner,
    [task.runner]: runnerObject,
    provider: task.runner,
    prompt: task.prompt,
    settings: { key_set: task.key !== null && task.key !== undefined },
    // Shown when the task has limits of its own (an addition: tasks without them read as before).
    ...(task.limits && Object.keys(task.limits).length > 0 ? { limits: task.limits } : {}),
    // `{ url, secret_set: true }` when the task has a completion webhook (docs/webhooks.md); never the secret.
    ...(task.webhook ? { webhook: presentWebhook(task.webhook) } : {}),
    created_at: task.created_at.toISOString(),
    modified_at: task.modified_at.toISOString(),
  };
}
