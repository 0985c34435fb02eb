import { api, ok } from '../api/client';
import { TaskForm } from '../components/task-form';
import { useLoad } from '../lib/use-load';
import { BASE, navigate, seg } from '../router';

export function NewTaskPage({ profile }: { profile: string }) {
  const profiles = useLoad(() => ok(api.GET('/api/profiles/{user}', { params: { path: { user: '~' } } })), []);
  const names = profiles.data?.map((p) => p.slug.split('/')[1]!) ?? [profile];
  return (
    <>
      <h1>New task</h1>
      {profiles.error && <p role="alert">{profiles.error}</p>}
      {!profiles.loading && (
        <TaskForm profile={names.includes(profile) ? profile : names[0]!} profiles={names} onSaved={(task, where) => navigate(`${BASE}/tasks/${seg(where)}/${seg(task.name)}?saved=1`)} />
      )}
    </>
  );
}
