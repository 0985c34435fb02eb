import { useState } from 'preact/hooks';
import { api, json, messageOf, ok, send } from '../api/client';
import type { Schedule } from '../api/types';
import { TaskPicker, splitTask } from '../components/task-picker';
import { checked, jsonObject, text, when } from '../lib/forms';
import { useLoad } from '../lib/use-load';
import { Link, seg } from '../router';

/** A task's schedules (docs/schedules.md): create, pause and resume, delete; their next fire times and recent runs. */
export function SchedulesPage({ task: chosen }: { task?: string }) {
  const where = splitTask(chosen);
  return (
    <>
      <h1>Schedules</h1>
      <TaskPicker page="/schedules" task={chosen} />
      {where && <TaskSchedules key={chosen} profile={where.profile} task={where.task} />}
    </>
  );
}

function TaskSchedules({ profile, task }: { profile: string; task: string }) {
  const base = `/api/tasks/~/${seg(profile)}/${seg(task)}/schedules`;
  const list = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}/schedules', { params: { path: { user: '~', profile, task } } })), [profile, task], 5000);
  const [problem, setProblem] = useState<string>();

  const put = async (name: string, body: Record<string, unknown>) => {
    setProblem(undefined);
    try {
      await json(await send('PUT', `${base}/${seg(name)}`, body));
      list.reload();
      return true;
    } catch (err) {
      setProblem(messageOf(err));
      return false;
    }
  };
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const payload = jsonObject(text(form, 'payload') ?? '{}');
    if ('problem' in payload) return setProblem(`Trigger data: ${payload.problem}`);
    const timing = text(form, 'timing') ?? '';
    const cron = timing.includes(' ') || timing.startsWith('@');
    const body = { ...(cron ? { cron: timing } : { every: timing }), paused: checked(form, 'paused'), payload: payload.value };
    if (await put(text(form, 'name') ?? '', body)) form.reset();
  };
  const setPaused = (s: Schedule, paused: boolean) =>
    put(s.name, { ...(s.cron !== undefined ? { cron: s.cron, timezone: s.timezone } : { every: s.every }), paused, payload: s.payload });
  const remove = async (name: string) => {
    try {
      await json(await send('DELETE', `${base}/${seg(name)}`));
      list.reload();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };

  const schedules = (list.data?.schedules ?? []) as Schedule[];
  return (
    <>
      {list.error && <p role="alert">{list.error}</p>}
      {list.data && schedules.length === 0 && <p>No schedules for this task.</p>}
      <ul class="schedules">
        {schedules.map((s) => (
          <li key={s.name}>
            <h2>{s.name}</h2>
            <p>
              {s.cron !== undefined ? `cron "${s.cron}" (${s.timezone})` : `every ${s.every}`} · {s.paused ? 'paused' : 'active'}
            </p>
            <p>Next fire times: {s.next_action_times.length ? s.next_action_times.map(when).join(', ') : 'none'}</p>
            {s.recent_runs.length > 0 && (
              <p>
                Recent runs:{' '}
                {s.recent_runs.map((r, i) => (
                  <span key={r.name}>
                    {i ? ', ' : ''}
                    <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(r.name)}`}>{r.name}</Link>
                  </span>
                ))}
              </p>
            )}
            <button type="button" onClick={() => setPaused(s, !s.paused)}>
              {s.paused ? 'Resume' : 'Pause'} {s.name}
            </button>{' '}
            <button type="button" onClick={() => remove(s.name)}>Delete {s.name}</button>
          </li>
        ))}
      </ul>
      <form onSubmit={create} aria-labelledby="new-schedule-heading">
        <h2 id="new-schedule-heading">New schedule</h2>
        <p>
          <label for="schedule-name">Name</label>
          <input id="schedule-name" name="name" required pattern="[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}" />
        </p>
        <p>
          <label for="schedule-timing">Every (such as 5s, 10m, 1h) or a cron expression</label>
          <input id="schedule-timing" name="timing" required />
        </p>
        <p>
          <label for="schedule-payload">Trigger data (JSON object)</label>
          <textarea id="schedule-payload" name="payload" rows={3} defaultValue="{}" />
        </p>
        <p>
          <input id="schedule-paused" name="paused" type="checkbox" />
          <label for="schedule-paused">Paused</label>
        </p>
        {problem && <p role="alert">{problem}</p>}
        <button type="submit">Create schedule</button>
      </form>
    </>
  );
}
