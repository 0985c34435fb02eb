import { api, ok } from '../api/client';
import { text, when, whole, checked } from '../lib/forms';
import { useAction } from '../lib/use-action';
import { useLoad } from '../lib/use-load';
import { BASE, Link, navigate, seg } from '../router';
import { DataTable } from './data-table';

type Variant = { name: string; model?: string };

/** Variants from lines of `name [model]` ("mini gpt-4o-mini"); a line without a model keeps the task's. */
export function parseVariants(source: string): { value: Variant[] } | { problem: string } {
  const value: Variant[] = [];
  for (const [i, line] of source.split('\n').entries()) {
    const words = line.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) continue;
    if (words.length > 2) return { problem: `line ${i + 1}: expected a name and at most one model, such as "mini gpt-4o-mini"` };
    value.push({ name: words[0]!, ...(words[1] ? { model: words[1] } : {}) });
  }
  return value.length === 0 ? { problem: 'give at least one variant' } : { value };
}

/** A task's evals (docs/evals.md), newest first, and a form that starts one. */
export function EvalsList({ profile, task }: { profile: string; task: string }) {
  const path = { user: '~', profile, task };
  const list = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}/evals', { params: { path } })), [profile, task]);
  const { busy, problem, act } = useAction();
  const evals = list.data ?? [];

  const start = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const variants = parseVariants(text(form, 'variants') ?? '');
    const contains = text(form, 'answer-contains');
    const checks = [...(contains ? [{ type: 'contains' as const, value: contains }] : []), ...(checked(form, 'same-answer') ? [{ type: 'same_as_original' as const }] : [])];
    return act(async () => {
      if ('problem' in variants) throw new Error(`Variants: ${variants.problem}`);
      const body = { runs: { last: whole(form, 'last') ?? 10 }, variants: variants.value, tools: (text(form, 'tools') ?? 'recorded') as 'recorded' | 'recorded_then_live', checks, concurrency: whole(form, 'concurrency') ?? 4 };
      const made = await ok(api.POST('/api/tasks/{user}/{profile}/{task}/evals', { params: { path }, body }));
      navigate(`${BASE}/evals/${seg(profile)}/${seg(task)}/${seg(made.id)}`);
    });
  };

  return (
    <>
      {list.error && <p role="alert">{list.error}</p>}
      {evals.length === 0 ? (
        <p>No evals yet.</p>
      ) : (
        <DataTable caption="Evals of this task, newest first" columns={['Eval', 'Status', 'Runs', 'Variants', 'Started']}>
          {evals.map((e) => (
            <tr key={e.id}>
              <td>
                <Link to={`/evals/${seg(profile)}/${seg(task)}/${seg(e.id)}`}>{e.id}</Link>
              </td>
              <td>
                <span class={`badge ${e.status}`}>{e.status}</span>
              </td>
              <td>{e.runs}</td>
              <td>{e.variants.map((v) => v.name).join(', ')}</td>
              <td>{when(e.created_at)}</td>
            </tr>
          ))}
        </DataTable>
      )}
      <details>
        <summary>Start an eval</summary>
        <form onSubmit={start} aria-label="Start an eval">
          <p>
            <label for="eval-last">Replay the task's last closed runs (how many)</label>
            <input id="eval-last" name="last" type="number" min={1} max={100} value="10" />
          </p>
          <p>
            <label for="eval-variants">Variants, one per line: a name, then a model (the task's own when left out)</label>
            <textarea id="eval-variants" name="variants" rows={3} spellcheck={false} placeholder={'current\nmini gpt-4o-mini'} />
          </p>
          <p>
            <label for="eval-tools">Tool calls</label>
            <select id="eval-tools" name="tools">
              <option value="recorded">Recorded results only</option>
              <option value="recorded_then_live">Recorded results, then live for calls the run did not make</option>
            </select>
          </p>
          <p>
            <label for="eval-contains">Check: the answer contains (optional)</label>
            <input id="eval-contains" name="answer-contains" maxLength={1000} />
          </p>
          <p>
            <input id="eval-same" name="same-answer" type="checkbox" /> <label for="eval-same">Check: the same answer as the original</label>
          </p>
          <p>
            <label for="eval-concurrency">Replays at once (1–16)</label>
            <input id="eval-concurrency" name="concurrency" type="number" min={1} max={16} value="4" />
          </p>
          {problem && <p role="alert">{problem}</p>}
          <button type="submit" disabled={busy}>Start eval</button>
        </form>
      </details>
    </>
  );
}
