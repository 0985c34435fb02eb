import { api, ok } from '../api/client';
import { useLoad } from '../lib/use-load';
import { when } from '../lib/forms';
import { Link, seg } from '../router';
import { DataTable } from './data-table';

/** The task's latest webhook delivery attempts, newest first (docs/webhooks.md). */
export function Deliveries({ profile, task }: { profile: string; task: string }) {
  const list = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}/webhook/deliveries', { params: { path: { user: '~', profile, task } } })), [profile, task], 10000);
  if (list.error) return <p role="alert">{list.error}</p>;
  const deliveries = list.data?.deliveries ?? [];
  if (list.data && deliveries.length === 0) return <p>No deliveries yet.</p>;
  return (
    <DataTable caption="Delivery attempts, newest first" columns={['When', 'Run', 'Attempt', 'Answer', 'Error']}>
      {deliveries.map((d) => (
        <tr key={`${d.run}-${d.attempt}-${d.at}`}>
          <td>{when(d.at)}</td>
          <td>
            <Link to={`/runs/${seg(profile)}/${seg(task)}/${seg(d.run)}`}>{d.run}</Link>
          </td>
          <td>{d.attempt}</td>
          <td>{d.status}</td>
          <td>{d.error ?? ''}</td>
        </tr>
      ))}
    </DataTable>
  );
}
