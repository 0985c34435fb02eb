import { api, ok } from '../api/client';
import { useLoad } from '../lib/use-load';
import { BASE, navigate } from '../router';

/** Chooses the task a page is about; the choice is in the address (`?task=<profile>/<task>`). */
export function TaskPicker({ page, task }: { page: string; task?: string }) {
  const tasks = useLoad(() => ok(api.GET('/api/tasks/{user}', { params: { path: { user: '~' }, query: { limit: 1000 } as never } })), []);
  const slugs = (tasks.data ?? []).map((t) => t.slug.split('/').slice(1).join('/'));
  return (
    <p>
      <label for="task-picker">Task</label>{' '}
      <select id="task-picker" value={task ?? ''} onChange={(e) => navigate(`${BASE}${page}?task=${encodeURIComponent(e.currentTarget.value)}`)}>
        <option value="">(choose a task)</option>
        {slugs.map((s) => <option key={s} value={s}>{s}</option>)}
      </select>
      {tasks.error && <span role="alert"> {tasks.error}</span>}
    </p>
  );
}

/** `profile/task` from the address, or undefined. */
export function splitTask(task: string | undefined): { profile: string; task: string } | undefined {
  const [profile, name, extra] = (task ?? '').split('/');
  return profile && name && extra === undefined ? { profile, task: name } : undefined;
}
