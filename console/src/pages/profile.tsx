import { useState } from 'preact/hooks';
import { api, json, messageOf, ok, send } from '../api/client';
import type { Install } from '../api/types';
import { text } from '../lib/forms';
import { useLoad } from '../lib/use-load';
import { Link, seg } from '../router';

const isMcp = <T extends object>(install: T): install is Extract<T, { mcp: unknown }> => 'mcp' in install;

/** A profile's installs (servlets and MCP servers): install, test an MCP server's connection, remove. */
export function ProfilePage({ profile }: { profile: string }) {
  const base = `/api/profiles/~/${seg(profile)}/installations`;
  const installs = useLoad(() => ok(api.GET('/api/profiles/{user}/{profile}/installations', { params: { path: { user: '~', profile } } })), [profile]);
  const servlets = useLoad(() => ok(api.GET('/api/servlets')), []);
  const [kind, setKind] = useState<'servlet' | 'mcp'>('servlet');
  const [problem, setProblem] = useState<string>();
  const [notes, setNotes] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const install = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setProblem(undefined);
    const approval = text(form, 'approval');
    const body =
      kind === 'mcp'
        ? { name: text(form, 'name'), mcp: { url: text(form, 'url') }, settings: approval ? { approval: approval === '*' || approval === 'none' || approval === 'destructive' ? approval : approval.split(',').map((s) => s.trim()) } : undefined }
        : { servlet_slug: text(form, 'slug'), name: text(form, 'name'), settings: approval ? { approval: approval === '*' ? approval : approval.split(',').map((s) => s.trim()) } : undefined };
    setBusy(true);
    try {
      await json(await send('POST', base, body));
      form.reset();
      installs.reload();
    } catch (err) {
      setProblem(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const testConnection = async (name: string) => {
    setNotes((n) => ({ ...n, [name]: 'Connecting…' }));
    try {
      const answer = await json<Install>(await send('POST', `${base}/${seg(name)}/refresh`));
      const tools = isMcp(answer) ? answer.mcp.tools.map((t) => t.name) : [];
      setNotes((n) => ({ ...n, [name]: `Connected: ${tools.length} tool${tools.length === 1 ? '' : 's'}${tools.length ? ` (${tools.join(', ')})` : ''}.` }));
      installs.reload();
    } catch (err) {
      setNotes((n) => ({ ...n, [name]: `Failed: ${messageOf(err)}` }));
    }
  };

  const remove = async (name: string) => {
    try {
      await json(await send('DELETE', `${base}/${seg(name)}`));
      installs.reload();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };

  const list = installs.data?.installs ?? [];
  return (
    <>
      <p class="crumbs">
        <Link to="/profiles">Profiles</Link>
      </p>
      <h1>Profile {profile}</h1>
      <p>
        <Link to={`/tasks/new?profile=${seg(profile)}`}>New task in this profile</Link>
      </p>
      <section aria-labelledby="installs-heading">
        <h2 id="installs-heading">Installs</h2>
        {installs.error && <p role="alert">{installs.error}</p>}
        {installs.data && list.length === 0 && <p>Nothing installed.</p>}
        <ul class="installs">
          {list.map((i) => (
            <li key={i.name}>
              <h3>{i.name}</h3>
              {isMcp(i) ? (
                <>
                  <p>
                    MCP server at <code>{i.mcp.url}</code>; {i.mcp.tools.length} tools; approval: {JSON.stringify(i.settings.approval)}
                  </p>
                  <button type="button" onClick={() => testConnection(i.name)} aria-describedby={`note-${i.name}`}>Test connection</button>{' '}
                </>
              ) : (
                <p>
                  Servlet {i.servlet.slug}; tools: {('schema' in i.servlet.meta ? i.servlet.meta.schema.tools.map((t) => t.name).join(', ') : '') || 'none'}
                  {i.settings.approval && `; approval: ${JSON.stringify(i.settings.approval)}`}
                </p>
              )}
              <button type="button" onClick={() => remove(i.name)}>Remove {i.name}</button>
              <p id={`note-${i.name}`} role="status">{notes[i.name] ?? ''}</p>
            </li>
          ))}
        </ul>
      </section>
      <form onSubmit={install} aria-labelledby="install-heading">
        <h2 id="install-heading">Install</h2>
        <fieldset>
          <legend>What</legend>
          <input id="kind-servlet" type="radio" name="kind" value="servlet" checked={kind === 'servlet'} onChange={() => setKind('servlet')} />
          <label for="kind-servlet">A servlet</label>{' '}
          <input id="kind-mcp" type="radio" name="kind" value="mcp" checked={kind === 'mcp'} onChange={() => setKind('mcp')} />
          <label for="kind-mcp">An MCP server</label>
        </fieldset>
        {kind === 'servlet' ? (
          <p>
            <label for="install-slug">Servlet (owner/name)</label>
            <input id="install-slug" name="slug" required list="servlet-slugs" />
            <datalist id="servlet-slugs">
              {(servlets.data ?? []).map((s) => <option key={s.slug} value={s.slug} />)}
            </datalist>
          </p>
        ) : (
          <p>
            <label for="install-url">Server URL (Streamable HTTP)</label>
            <input id="install-url" name="url" type="url" required />
          </p>
        )}
        <p>
          <label for="install-name">Install name{kind === 'servlet' ? ' (optional)' : ''}</label>
          <input id="install-name" name="name" required={kind === 'mcp'} />
        </p>
        <p>
          <label for="install-approval">
            Tools that need approval: {kind === 'mcp' ? '"destructive" (default), "none", "*" or names' : '"*" or names'}, comma separated
          </label>
          <input id="install-approval" name="approval" />
        </p>
        {problem && <p role="alert">{problem}</p>}
        <button type="submit" disabled={busy}>Install</button>
      </form>
    </>
  );
}
