import { useState } from 'preact/hooks';
import { api, ApiError, nextCursor } from '../api/client';
import type { Run } from '../api/types';
import { useLoad } from '../lib/use-load';
import { when } from '../lib/forms';
import { Link, seg } from '../router';
import { DataTable } from './data-table';

const PAGE = 20;
const STATUSES = ['pending', 'running', 'ready', 'error'];

/** A task's runs, newest first, a page at a time, read again every few seconds; of one status when one is chosen (the API filters). */
export function RunsList({ profile, task }: { profile: string; task: string }) {
  // The cursors of the pages before this one (the first page has none).
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const [status, setStatus] = useState('');
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    async () => {
      const { data, error, response } = await api.GET('/api/runs/{user}/{profile}/{task}', {
        params: { path: { user: '~', profile, task }, query: { limit: PAGE, ...(cursor ? { cursor } : {}), ...(status ? { status } : {}) } as never },
      });
      if (!response.ok) throw new ApiError(response.status, '', (error as { error?: { message?: string } })?.error?.message ?? response.statusText);
      return { runs: data as Run[], next: nextCursor(response) };
    },
    [profile, task, cursor, status],
    3000,
  );
  const runs = page.data?.runs ?? [];
  return (
    <>
      <p>
        <label for="runs-status">Status</label>{' '}
        <select
          id="runs-status"
          value={status}
          onChange={(e) => {
            // Another status lists from its newest run.
            setStatus(e.currentTarget.value);
            setCursors([undefined]);
          }}
        >
          <option value="">any</option>
          {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
      </p>
      {page.error && <p role="alert">{page.error}</p>}
      {page.data && runs.length === 0 && <p>No runs{status ? ` with status ${status}` : ''}{cursors.length > 1 ? ' on this page' : ''}.</p>}
      {runs.length > 0 && (
        <DataTable caption="Runs, newest first (refreshed every 3 s)" columns={['Run', 'Status', 'Started', 'Changed']}>
          {runs.map((run) => (
            <tr key={run.name}>
              <td>
                <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(run.name)}`}>{run.name}</Link>
              </td>
              <td>
                <span class={`badge ${run.status}`}>{run.status}</span>
              </td>
              <td>{when(run.created_at)}</td>
              <td>{when(run.modified_at)}</td>
            </tr>
          ))}
        </DataTable>
      )}
      <p class="pager">
        <button type="button" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
          Newer runs
        </button>{' '}
        <button type="button" disabled={!page.data?.next} onClick={() => setCursors([...cursors, page.data!.next])}>
          Older runs
        </button>
      </p>
    </>
  );
}
