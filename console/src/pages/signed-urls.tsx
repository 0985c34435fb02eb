import { useState } from 'preact/hooks';
import { api, json, messageOf, ok, send } from '../api/client';
import { forgetSignedUrl } from '../api/trigger';
import { TaskPicker, splitTask } from '../components/task-picker';
import { copy } from '../lib/forms';
import { seg } from '../router';

/**
 * A task's signed URLs (docs/runs.md, "Signed URLs"). The API keeps no list of the URLs it issued (only their
 * revocations), so this page shows the ones made here, until it is left; "Invalidate all signed URLs" reaches every one.
 */
export function SignedUrlsPage({ task: chosen }: { task?: string }) {
  const where = splitTask(chosen);
  return (
    <>
      <h1>Signed URLs</h1>
      <TaskPicker page="/signed-urls" task={chosen} />
      {where && <TaskSignedUrls key={chosen} profile={where.profile} task={where.task} />}
    </>
  );
}

function TaskSignedUrls({ profile, task }: { profile: string; task: string }) {
  const base = `/api/tasks/~/${seg(profile)}/${seg(task)}/signed`;
  const [urls, setUrls] = useState<Array<{ url: string; revoked: boolean }>>([]);
  const [note, setNote] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const attempt = async (what: () => Promise<void>) => {
    setProblem(undefined);
    try {
      await what();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };
  const create = () =>
    attempt(async () => {
      const { url } = await ok(api.POST('/api/tasks/{user}/{profile}/{task}/signed', { params: { path: { user: '~', profile, task } } }));
      setUrls((list) => [{ url, revoked: false }, ...list]);
      setNote('Signed URL created. Whoever has it can trigger this task: keep it secret.');
    });
  const revoke = (url: string) =>
    attempt(async () => {
      await json(await send('POST', `${base}/revoke`, { url }));
      setUrls((list) => list.map((u) => (u.url === url ? { ...u, revoked: true } : u)));
      setNote('Revoked.');
    });
  const revokeAll = () =>
    attempt(async () => {
      await json(await send('DELETE', base));
      forgetSignedUrl(profile, task);
      setUrls((list) => list.map((u) => ({ ...u, revoked: true })));
      setNote('Every signed URL of this task issued so far is revoked.');
    });
  return (
    <>
      <p>
        <button type="button" onClick={create}>Create signed URL</button>{' '}
        <button type="button" onClick={revokeAll}>Invalidate all signed URLs</button>
      </p>
      <p role="status">{note ?? ''}</p>
      {problem && <p role="alert">{problem}</p>}
      <ul class="signed-urls">
        {urls.map(({ url, revoked }, i) => (
          <li key={url}>
            <label for={`signed-${i}`}>Signed URL {urls.length - i}{revoked ? ' (revoked)' : ''}</label>
            <input id={`signed-${i}`} readOnly value={url} size={80} onFocus={(e) => e.currentTarget.select()} />{' '}
            <button type="button" onClick={async () => setNote((await copy(url)) ? 'Copied.' : 'The browser did not allow copying: select the URL and copy it.')}>
              Copy
            </button>{' '}
            {!revoked && (
              <button type="button" onClick={() => revoke(url)}>Revoke</button>
            )}
          </li>
        ))}
      </ul>
    </>
  );
}
