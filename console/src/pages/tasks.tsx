import { api, ok } from '../api/client';
import { useLoad } from '../lib/use-load';
import { when } from '../lib/forms';
import { Link, seg } from '../router';
import { DataTable } from '../components/data-table';

/** Every task of the user, in every profile. */
export function TasksPage() {
  const tasks = useLoad(() => ok(api.GET('/api/tasks/{user}', { params: { path: { user: '~' }, query: { limit: 1000 } as never } })), []);
  return (
    <>
      <h1>Tasks</h1>
      <p>
        <Link to="/tasks/new">New task</Link>
      </p>
      {tasks.error && <p role="alert">{tasks.error}</p>}
      {tasks.data && tasks.data.length === 0 && <p>No tasks yet.</p>}
      {tasks.data && tasks.data.length > 0 && (
        <DataTable caption="Your tasks" columns={['Task', 'Profile', 'Runner', 'Model', 'Changed']}>
          {tasks.data.map((task) => {
            const profile = task.slug.split('/')[1]!;
            return (
              <tr key={task.slug}>
                <td>
                  <Link to={`/tasks/${seg(profile)}/${seg(task.name)}`}>{task.name}</Link>
                </td>
                <td>{profile}</td>
                <td>{task.runner}</td>
                <td>{(task.runner === 'openai' ? task.openai : task.anthropic)?.model}</td>
                <td>{when(task.modified_at)}</td>
              </tr>
            );
          })}
        </DataTable>
      )}
    </>
  );
}
