import { useState } from 'preact/hooks';
import { api, json, messageOf, ok, send } from '../api/client';
import type { CreatedToken } from '../api/types';
import { copy, text, when, whole } from '../lib/forms';
import { useLoad } from '../lib/use-load';
import { seg } from '../router';
import { DataTable } from '../components/data-table';

/** src/store/tokens.ts's TOKEN_SCOPES. */
const SCOPES = ['tasks:read', 'runs:trigger', 'runs:read', 'runs:control'];

/** Access tokens (docs/tokens.md): list, create (the token shown once), revoke. */
export function TokensPage() {
  const tokens = useLoad(() => ok(api.GET('/api/tokens/{user}', { params: { path: { user: '~' } } })), []);
  const [created, setCreated] = useState<CreatedToken>();
  const [problem, setProblem] = useState<string>();
  const [note, setNote] = useState<string>();

  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setProblem(undefined);
    const profiles = text(form, 'profiles')?.split(',').map((p) => p.trim()).filter(Boolean);
    const scopes = SCOPES.filter((s) => (form.elements.namedItem(`scope-${s}`) as HTMLInputElement | null)?.checked);
    try {
      const token = await json<CreatedToken>(
        await send('POST', '/api/tokens/~', { name: text(form, 'name'), profiles: profiles?.length ? profiles : null, scopes, expires_in_days: whole(form, 'days') }),
      );
      setCreated(token);
      form.reset();
      tokens.reload();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };
  const revoke = async (name: string) => {
    try {
      await json(await send('DELETE', `/api/tokens/~/${seg(name)}`));
      setNote(`Token ${name} revoked.`);
      tokens.reload();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };

  return (
    <>
      <h1>Access tokens</h1>
      {tokens.error && <p role="alert">{tokens.error}</p>}
      <p role="status">{note ?? ''}</p>
      {created && (
        <section class="ask-panel" aria-labelledby="created-heading">
          <h2 id="created-heading">Token {created.name} created</h2>
          <p>Copy it now: it is shown only this once.</p>
          <p>
            <label for="created-token">Token</label>
            <input id="created-token" readOnly value={created.token} size={60} onFocus={(e) => e.currentTarget.select()} />{' '}
            <button type="button" onClick={async () => setNote((await copy(created.token)) ? 'Copied.' : 'The browser did not allow copying: select the token and copy it.')}>
              Copy
            </button>
          </p>
        </section>
      )}
      {tokens.data && tokens.data.length === 0 && <p>No tokens.</p>}
      {tokens.data && tokens.data.length > 0 && (
        <DataTable caption="Your tokens" columns={['Name', 'Profiles', 'Scopes', 'Expires', 'Last used', { hidden: 'Actions' }]}>
          {tokens.data.map((t) => (
            <tr key={t.name}>
              <td>{t.name}</td>
              <td>{t.profiles ? t.profiles.join(', ') : 'all'}</td>
              <td>{t.scopes.join(', ')}</td>
              <td>{when(t.expires_at)}</td>
              <td>{t.last_used_at ? when(t.last_used_at) : 'never'}</td>
              <td>
                <button type="button" onClick={() => revoke(t.name)}>Revoke</button>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      <form onSubmit={create} aria-labelledby="new-token-heading">
        <h2 id="new-token-heading">New token</h2>
        <p>
          <label for="token-name">Name</label>
          <input id="token-name" name="name" required />
        </p>
        <p>
          <label for="token-profiles">Profiles (comma separated; empty: all)</label>
          <input id="token-profiles" name="profiles" />
        </p>
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <span key={s}>
              <input id={`scope-${s}`} name={`scope-${s}`} type="checkbox" defaultChecked />
              <label for={`scope-${s}`}>{s}</label>{' '}
            </span>
          ))}
        </fieldset>
        <p>
          <label for="token-days">Days until it expires</label>
          <input id="token-days" name="days" type="number" min={1} defaultValue="90" />
        </p>
        {problem && <p role="alert">{problem}</p>}
        <button type="submit">Create token</button>
      </form>
    </>
  );
}
