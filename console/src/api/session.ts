import { api, json, ok, send } from './client';

/** GET /api/console/settings (docs/console-contract): who is signed in and where the Temporal Web UI is. */
export interface ConsoleSettings {
  username: string;
  temporal_ui_url: string | null;
  temporal_namespace: string;
}

/** `#token=<token>` of a sign-in link, removed from the address at once so it stays out of history and bookmarks. */
export function takeFragmentToken(): string | undefined {
  const match = location.hash.match(/^#token=([^&]+)/);
  if (!match) return undefined;
  history.replaceState(history.state, '', location.pathname + location.search);
  return decodeURIComponent(match[1]!);
}

/** POST /api/sign-in: true when the link's token gave a session (its cookie), false when the link is used or expired. */
export async function signIn(token: string): Promise<boolean> {
  const response = await send('POST', '/api/sign-in', { token });
  if (response.status === 204) return true;
  if (response.status === 401) return false;
  await json(response);
  return false;
}

export async function signOut(): Promise<void> {
  await send('POST', '/api/sign-out');
}

/** The session's settings, or undefined without a session. */
export async function loadSettings(): Promise<ConsoleSettings | undefined> {
  const response = await fetch('/api/console/settings', { credentials: 'same-origin' });
  if (response.status === 401) return undefined;
  if (response.status === 404) {
    // An API without the console's settings route: the user from /api/users/~, no Web UI link.
    const user = await ok(api.GET('/api/users/{user}', { params: { path: { user: '~' } } })).catch(() => undefined);
    return user ? { username: user.username, temporal_ui_url: null, temporal_namespace: 'default' } : undefined;
  }
  return json<ConsoleSettings>(response);
}

/** A run's workflow in the Temporal Web UI, or undefined when the API knows of no Web UI. */
export function workflowUrl(settings: ConsoleSettings, run: { profile: string; task: string; run: string }): string | undefined {
  if (!settings.temporal_ui_url) return undefined;
  const id = `run/${settings.username}/${run.profile}/${run.task}/${run.run}`;
  return `${settings.temporal_ui_url.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(settings.temporal_namespace)}/workflows/${encodeURIComponent(id)}`;
}
