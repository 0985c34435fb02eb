import { api, ok } from '../api/client';
import { DataTable } from '../components/data-table';
import { duration, when } from '../lib/forms';
import { useAction } from '../lib/use-action';
import { useLoad } from '../lib/use-load';
import { BASE, Link, navigate, seg } from '../router';

const LIVE_EVAL = ['pending', 'running'];

/**
 * One eval (docs/evals.md): what it asked, its status, and per variant its scorecard (runs done, checks passed,
 * tokens, median duration) and each replay with a link to its page, which shows its difference from the original.
 * Read again every two seconds while it is live.
 */
export function EvalPage({ profile, task, id }: { profile: string; task: string; id: string }) {
  const path = { user: '~', profile, task, id };
  const loaded = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}/evals/{id}', { params: { path } })), [profile, task, id], 2000);
  const { busy, problem, act } = useAction();
  const e = loaded.data;
  const live = e !== undefined && LIVE_EVAL.includes(e.status);
  const cancel = () =>
    act(async () => {
      await ok(api.POST('/api/tasks/{user}/{profile}/{task}/evals/{id}/cancel', { params: { path } }));
      loaded.reload();
    });
  const remove = () =>
    act(async () => {
      await ok(api.DELETE('/api/tasks/{user}/{profile}/{task}/evals/{id}', { params: { path } }));
      navigate(`${BASE}/tasks/${seg(profile)}/${seg(task)}`);
    });
  return (
    <>
      <p class="crumbs">
        <Link to={`/tasks/${seg(profile)}/${seg(task)}`}>
          Task {task} in {profile}
        </Link>
      </p>
      <h1>Eval {id}</h1>
      {loaded.error && <p role="alert">{loaded.error}</p>}
      {e && (
        <>
          <p role="status" class={`run-status ${e.status}`}>
            Status: <strong>{e.status}</strong>
            {e.reason && <span> ({e.reason})</span>}
          </p>
          <dl class="facts">
            <dt>Started</dt>
            <dd>{when(e.created_at)}</dd>
            <dt>Replays</dt>
            <dd>
              {e.runs} runs under {e.variants.length} {e.variants.length === 1 ? 'variant' : 'variants'}, tools {e.tools === 'recorded' ? 'recorded only' : 'recorded, then live'}, {e.concurrency} at once
            </dd>
            <dt>Checks</dt>
            <dd>{e.checks.length === 0 ? 'none' : e.checks.map((c) => ('value' in c ? `contains "${c.value}"` : 'pattern' in c ? `matches /${c.pattern}/` : c.type === 'json_schema' ? 'fits a JSON schema' : 'same as the original')).join('; ')}</dd>
          </dl>
          <p class="actions">
            {live ? (
              <button type="button" disabled={busy} onClick={cancel}>Cancel eval</button>
            ) : (
              <button type="button" disabled={busy} onClick={remove}>Delete eval</button>
            )}
          </p>
          {problem && <p role="alert">{problem}</p>}
          <DataTable caption="Scorecard" columns={['Variant', 'Model', 'Runs done', 'Checks passed', 'Tokens', 'Median duration']}>
            {e.scorecard.map((v) => (
              <tr key={v.name}>
                <th scope="row">{v.name}</th>
                <td>{e.variants.find((x) => x.name === v.name)?.model ?? "the task's"}</td>
                <td>
                  {v.runs.done} of {v.runs.total}
                </td>
                <td>{v.checks.total === 0 ? '—' : `${v.checks.passed} of ${v.checks.total}`}</td>
                <td>{v.tokens}</td>
                <td>{v.p50_duration_ms === null ? '—' : duration(v.p50_duration_ms)}</td>
              </tr>
            ))}
          </DataTable>
          {e.scorecard.map((v) => (
            <section key={v.name} aria-labelledby={`variant-${v.name}`}>
              <h2 id={`variant-${v.name}`}>Variant {v.name}</h2>
              <DataTable caption={`Replays of variant ${v.name}: each page shows its difference from the original`} columns={['Replay', 'Status', 'Checks passed']}>
                {v.diffs.map((d) => (
                  <tr key={d.run}>
                    <td>
                      <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(d.run)}`}>{d.run}</Link>
                    </td>
                    <td>
                      <span class={`badge ${d.status}`}>{d.status}</span>
                    </td>
                    <td>{d.checks_total === 0 ? '—' : `${d.checks_passed} of ${d.checks_total}`}</td>
                  </tr>
                ))}
              </DataTable>
            </section>
          ))}
        </>
      )}
    </>
  );
}
