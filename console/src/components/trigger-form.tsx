import { useState } from 'preact/hooks';
import { messageOf } from '../api/client';
import { triggerRun } from '../api/trigger';
import type { Task } from '../api/types';
import { jsonObject, text } from '../lib/forms';
import { placeholders, sampleData } from '../lib/placeholders';
import { BASE, navigate, seg } from '../router';

/** The trigger data as a JSON object, started from the prompt's placeholders and checked before it is sent. */
export function TriggerForm({ profile, task }: { profile: string; task: Task }) {
  const names = placeholders(task.prompt) ?? [];
  const [source, setSource] = useState(() => JSON.stringify(sampleData(names), null, 2));
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  const checkedData = jsonObject(source);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    // What the field holds now, whatever the last render saw.
    const data = jsonObject((form.elements.namedItem('data') as HTMLTextAreaElement).value);
    if ('problem' in data) return setProblem(`Trigger data: ${data.problem}`);
    setProblem(undefined);
    setBusy(true);
    try {
      const run = await triggerRun(profile, task.name, data.value, text(form, 'run'));
      navigate(`${BASE}/runs/${seg(profile)}/${seg(task.name)}/${seg(run)}`);
    } catch (err) {
      setProblem(messageOf(err));
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} aria-label="Trigger a run">
      <p>
        Placeholders: {names.length === 0 ? 'none' : names.map((n, i) => <code key={n}>{`${i ? ', ' : ''}{{${n}}}`}</code>)}
      </p>
      <p>
        <label for="trigger-data">Trigger data (JSON object)</label>
        <textarea
          id="trigger-data"
          name="data"
          rows={6}
          spellcheck={false}
          value={source}
          aria-invalid={'problem' in checkedData}
          aria-describedby="trigger-data-check"
          onInput={(e) => setSource(e.currentTarget.value)}
        />
      </p>
      <p id="trigger-data-check" class={'problem' in checkedData ? 'bad' : 'hint'}>
        {'problem' in checkedData ? checkedData.problem : 'Valid JSON object.'}
        {'value' in checkedData && names.filter((n) => !n.includes('.') && !(n in checkedData.value)).length > 0 && ` Missing: ${names.filter((n) => !n.includes('.') && !(n in checkedData.value)).join(', ')} (they expand to empty).`}
      </p>
      <p>
        <label for="trigger-run">Run name (optional; the same name again answers the run it named)</label>
        <input id="trigger-run" name="run" pattern="[A-Za-z0-9_.\-]{1,64}" />
      </p>
      {problem && <p role="alert">{problem}</p>}
      <button type="submit" disabled={busy}>Trigger run</button>
    </form>
  );
}
