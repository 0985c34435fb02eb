import { useState } from 'preact/hooks';
import { api, messageOf, ok } from '../api/client';
import type { Task } from '../api/types';
import { text, whole, checked } from '../lib/forms';
import { PromptEditor } from './prompt-editor';

interface Props {
  /** The task to edit; absent: a new task, in `profile` (which the form lets the user change). */
  task?: Task;
  profile: string;
  profiles?: string[];
  onSaved: (task: Task & { warnings?: Array<{ message: string }> }, profile: string) => void;
}

/** A task's `settings.priority` (docs/fairness.md): 1 highest, 5 lowest, 3 when unset. */
const PRIORITIES: [number, string][] = [
  [1, '1 (highest)'],
  [2, '2'],
  [3, '3 (default)'],
  [4, '4'],
  [5, '5 (lowest)'],
];

/** Create or edit a task (Variant B's contract form): runner, model, prompt, description, limits, key, webhook. */
export function TaskForm({ task, profile, profiles, onSaved }: Props) {
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  const runnerObject = task ? (task.runner === 'openai' ? task.openai : task.anthropic) : undefined;
  const [runner, setRunner] = useState<string>(task?.runner ?? 'openai');

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setProblem(undefined);
    const name = task?.name ?? text(form, 'name');
    const where = task ? profile : (text(form, 'profile') ?? profile);
    if (!name) return setProblem('name: required');
    const limits = { max_turns: whole(form, 'max_turns'), timeout_s: whole(form, 'timeout_s'), max_total_tokens: whole(form, 'max_total_tokens') };
    const hasLimits = Object.values(limits).some((v) => v !== undefined);
    const key = text(form, 'key');
    const webhookUrl = text(form, 'webhook');
    const body: Record<string, unknown> = {
      runner,
      [runner]: { prompt: (form.elements.namedItem('prompt') as HTMLTextAreaElement).value, model: text(form, 'model') ?? '', max_tokens: whole(form, 'max_tokens') },
      description: text(form, 'description') ?? null,
      limits: hasLimits ? limits : null,
    };
    // The task's priority is saved with every save (absent would reset it to 3).
    const priority = Number((form.elements.namedItem('priority') as HTMLSelectElement).value);
    const settings: Record<string, unknown> = { priority };
    if (key) settings.key = key;
    else if (checked(form, 'drop_key')) settings.key = null;
    body.settings = settings;
    // Absent keeps the stored webhook (and its secret); null removes it.
    if (webhookUrl && webhookUrl !== task?.webhook?.url) body.webhook = { url: webhookUrl };
    else if (!webhookUrl && task?.webhook) body.webhook = null;
    if (task?.input_schema) body.input_schema = task.input_schema;
    setBusy(true);
    try {
      const saved = await ok(
        api.PUT('/api/tasks/{user}/{profile}/{task}', { params: { path: { user: '~', profile: where, task: name } }, body: body as never }),
      );
      onSaved(saved as Task, where);
    } catch (err) {
      setProblem(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} class="task-form" aria-label={task ? 'Edit task' : 'New task'}>
      {!task && (
        <fieldset>
          <legend>Where</legend>
          <p>
            <label for="task-profile">Profile</label>
            <select id="task-profile" name="profile">
              {(profiles ?? [profile]).map((p) => (
                <option key={p} value={p} selected={p === profile}>
                  {p}
                </option>
              ))}
            </select>
          </p>
          <p>
            <label for="task-name">Name</label>
            <input id="task-name" name="name" required pattern="[A-Za-z0-9_.\-]{1,64}" title="letters, digits, _, - and ., at most 64" />
          </p>
        </fieldset>
      )}
      <fieldset>
        <legend>Model</legend>
        <p>
          <label for="task-runner">Runner</label>
          <select id="task-runner" name="runner" value={runner} onChange={(e) => setRunner(e.currentTarget.value)}>
            <option value="openai">openai</option>
            <option value="anthropic">anthropic</option>
          </select>
        </p>
        <p>
          <label for="task-model">Model</label>
          <input id="task-model" name="model" required defaultValue={runnerObject?.model ?? (runner === 'openai' ? 'gpt-4o-mini' : 'claude-sonnet-4-5')} />
        </p>
        <p>
          <label for="task-max-tokens">Max tokens per answer</label>
          <input id="task-max-tokens" name="max_tokens" type="number" min={1} defaultValue={runnerObject?.max_tokens?.toString() ?? ''} />
        </p>
      </fieldset>
      <PromptEditor initial={runnerObject?.prompt ?? task?.prompt ?? ''} />
      <p>
        <label for="task-description">Description</label>
        <textarea id="task-description" name="description" rows={2} defaultValue={task?.description ?? ''} />
      </p>
      <fieldset>
        <legend>Limits</legend>
        <p>
          <label for="task-max-turns">Max model calls per run</label>
          <input id="task-max-turns" name="max_turns" type="number" min={1} defaultValue={task?.limits?.max_turns?.toString() ?? ''} />
        </p>
        <p>
          <label for="task-timeout">Time limit (seconds)</label>
          <input id="task-timeout" name="timeout_s" type="number" min={1} defaultValue={task?.limits?.timeout_s?.toString() ?? ''} />
        </p>
        <p>
          <label for="task-tokens">Max total tokens per run</label>
          <input id="task-tokens" name="max_total_tokens" type="number" min={1} defaultValue={task?.limits?.max_total_tokens?.toString() ?? ''} />
        </p>
        <p class="hint">Tool approvals are set on a profile's installs (Profiles).</p>
      </fieldset>
      <fieldset>
        <legend>Settings</legend>
        <p>
          <label for="task-key">Provider key of this task {task?.settings.key_set ? '(one is set; empty keeps it)' : "(empty: the server's)"}</label>
          <input id="task-key" name="key" type="password" autocomplete="off" />
        </p>
        {task?.settings.key_set && (
          <p>
            <input id="task-drop-key" name="drop_key" type="checkbox" />
            <label for="task-drop-key">Remove the task's own key</label>
          </p>
        )}
        <p>
          <label for="task-priority">Priority of its runs when the service is busy</label>
          <select id="task-priority" name="priority">
            {PRIORITIES.map(([value, label]) => (
              <option key={value} value={String(value)} selected={value === (task?.settings.priority ?? 3)}>
                {label}
              </option>
            ))}
          </select>
        </p>
        <p>
          <label for="task-webhook">Webhook URL (called when a run ends; empty: none)</label>
          <input id="task-webhook" name="webhook" type="url" defaultValue={task?.webhook?.url ?? ''} />
        </p>
      </fieldset>
      {problem && <p role="alert">{problem}</p>}
      <button type="submit" disabled={busy}>{task ? 'Save task' : 'Create task'}</button>
    </form>
  );
}
