import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Task } from '../api/types';
import { TaskForm } from '../components/task-form';
import { TriggerForm } from '../components/trigger-form';
import { RunsList } from '../components/runs-list';
import { Deliveries } from '../components/deliveries';
import { EvalsList } from '../components/evals-list';
import { useLoad } from '../lib/use-load';
import { Link, seg } from '../router';

/** One task: trigger it, its runs, edit it, its webhook deliveries. */
export function TaskPage({ profile, task: name, query }: { profile: string; task: string; query: URLSearchParams }) {
  const path = { user: '~', profile, task: name };
  const loaded = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}', { params: { path } })), [profile, name]);
  const [saved, setSaved] = useState<{ task: Task; note: string }>();
  const task = saved?.task ?? loaded.data;
  const taskQuery = `?task=${seg(`${profile}/${name}`)}`;
  return (
    <>
      <h1>
        Task {name} <span class="muted">in {profile}</span>
      </h1>
      {loaded.error && <p role="alert">{loaded.error}</p>}
      {query.get('saved') && !saved && <p role="status">Task created.</p>}
      {task && (
        <>
          <p>
            <Link to={`/schedules${taskQuery}`}>Schedules of this task</Link> · <Link to={`/signed-urls${taskQuery}`}>Signed URLs of this task</Link>
          </p>
          <section aria-labelledby="trigger-heading">
            <h2 id="trigger-heading">Trigger a run</h2>
            <TriggerForm profile={profile} task={task} />
          </section>
          <section aria-labelledby="runs-heading">
            <h2 id="runs-heading">Runs</h2>
            <RunsList profile={profile} task={name} />
          </section>
          <section aria-labelledby="evals-heading">
            <h2 id="evals-heading">Evals</h2>
            <EvalsList profile={profile} task={name} />
          </section>
          <section aria-labelledby="edit-heading">
            <h2 id="edit-heading">Edit</h2>
            {saved && <p role="status">{saved.note}</p>}
            <TaskForm
              key={task.modified_at}
              task={task}
              profile={profile}
              onSaved={(next) => {
                const notes = ['Task saved.'];
                if (next.webhook?.secret) notes.push(`Webhook secret (shown this once): ${next.webhook.secret}`);
                for (const w of next.warnings ?? []) notes.push(w.message);
                setSaved({ task: next, note: notes.join(' ') });
              }}
            />
          </section>
          {task.webhook && (
            <section aria-labelledby="deliveries-heading">
              <h2 id="deliveries-heading">Webhook deliveries</h2>
              <Deliveries profile={profile} task={name} />
            </section>
          )}
        </>
      )}
    </>
  );
}
