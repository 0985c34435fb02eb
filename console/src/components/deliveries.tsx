import { api, ok } from '../api/client';
import { useLoad } from '../lib/use-load';
import { when } from '../lib/forms';
import { Link, seg } from '../router';

/** The task's latest webhook delivery attempts, newest first (docs/webhooks.md). */
export function Deliveries({ profile, task }: { profile: string; task: string }) {
  const list = useLoad(() => ok(api.GET('/api/tasks/{user}/{profile}/{task}/webhook/deliveries', { params: { path: { user: '~', profile, task } } })), [profile, task], 10000);
  if (list.error) return <p role="alert">{list.error}</p>;
  const deliveries = list.data?.deliveries ?? [];
  if (list.data && deliveries.length === 0) return <p>No deliveries yet.</p>;
  return (
    <table>
      <caption>Delivery attempts, newest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Run</th>
          <th scope="col">Attempt</th>
          <th scope="col">Answer</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
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
      </tbody>
    </table>
  );
}
