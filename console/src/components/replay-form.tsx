import { api, ok } from '../api/client';
import { text } from '../lib/forms';
import { useAction } from '../lib/use-action';
import { BASE, navigate, seg } from '../router';

type ReplayTools = 'recorded_then_live' | 'recorded' | 'live';

/** The last path segment of a run's URL: its name. */
const runNameOf = (url: string) => decodeURIComponent(new URL(url, location.origin).pathname.split('/').pop() ?? '');

/**
 * Replays a closed run (docs/replays.md): the same trigger data again, with another model or prompt if given, its
 * tool calls answered from the run's recorded results as `tools` says. Goes to the replay's page once it is made.
 */
export function ReplayForm({ profile, task, run }: { profile: string; task: string; run: string }) {
  const { busy, problem, act } = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const tools = (text(form, 'tools') ?? 'recorded_then_live') as ReplayTools;
    const body = { tools, ...optional('model', text(form, 'model')), ...optional('prompt', text(form, 'prompt')), ...optional('name', text(form, 'name')) };
    return act(async () => {
      const made = await ok(api.POST('/api/runs/{user}/{profile}/{task}/{run}/replays', { params: { path: { user: '~', profile, task, run } }, body }));
      navigate(`${BASE}/runs/${seg(profile)}/${seg(task)}/${seg(runNameOf(made.url))}`);
    });
  };
  return (
    <form onSubmit={submit} aria-label="Replay this run">
      <p>
        <label for="replay-tools">Tool calls</label>
        <select id="replay-tools" name="tools">
          <option value="recorded_then_live">Recorded results, then live for calls the run did not make</option>
          <option value="recorded">Recorded results only (a call the run did not make gets no result)</option>
          <option value="live">Live: every tool is called again</option>
        </select>
      </p>
      <p>
        <label for="replay-model">Model (optional; the run's own when empty)</label>
        <input id="replay-model" name="model" maxLength={200} />
      </p>
      <p>
        <label for="replay-prompt">Prompt template (optional; the run's own when empty)</label>
        <textarea id="replay-prompt" name="prompt" rows={4} spellcheck={false} />
      </p>
      <p>
        <label for="replay-name">Replay's name (optional; {`${run}.r<n>`} when empty)</label>
        <input id="replay-name" name="name" pattern="[A-Za-z0-9_.\-]{1,64}" />
      </p>
      {problem && <p role="alert">{problem}</p>}
      <button type="submit" disabled={busy}>Replay run</button>
    </form>
  );
}

const optional = <K extends string>(key: K, value: string | undefined) => (value === undefined ? {} : ({ [key]: value } as Record<K, string>));
