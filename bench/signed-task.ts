import { lastUserText, type RecordedRequest } from '../test/helpers/fake-provider';
import type { PartDeps } from './stack';

/** The API as one user: JSON unless `init.headers` says otherwise, signed in by that user's session cookie. */
export const apiAs = (apiUrl: string, session: string): PartDeps['api'] => (path, init = {}) =>
  fetch(`${apiUrl}${path}`, { ...init, headers: { 'content-type': 'application/json', cookie: `sessionId=${session}`, ...(init.headers as object) } });

/**
 * Creates or replaces the user's task `name` in the default profile (an openai runner with the task's own key and
 * `settings` beside it) and signs it. Resolves with the saved task as the API shows it and the signed trigger URL;
 * `rejected` instead when the API answered the save with a 4xx (its answer), which the caller may report.
 */
export async function signedTask(api: PartDeps['api'], name: string, prompt: string, settings: Record<string, unknown> = {}): Promise<{ task: { settings?: Record<string, unknown> }; signed: string } | { rejected: string }> {
  const body = { runner: 'openai', openai: { prompt, model: 'bench' }, settings: { key: 'sk-bench-task-key', ...settings } };
  const put = await api(`/api/tasks/~/default/${name}`, { method: 'PUT', body: JSON.stringify(body) });
  if (put.status >= 400 && put.status < 500) return { rejected: `${put.status} ${(await put.text()).slice(0, 300)}` };
  if (put.status !== 201 && put.status !== 200) throw new Error(`saving the task ${name} answered ${put.status}: ${await put.text()}`);
  const task = (await put.json()) as { settings?: Record<string, unknown> };
  const res = await api(`/api/tasks/~/default/${name}/signed`, { method: 'POST' });
  if (res.status !== 200) throw new Error(`signing the task ${name} answered ${res.status}: ${await res.text()}`);
  return { task, signed: ((await res.json()) as { url: string }).url };
}

/** Drops the fake's recorded requests whose last user text begins with `mark` (the fake keeps every request it parsed). */
export function forgetRequests(requests: RecordedRequest[], mark: string): void {
  let kept = 0;
  for (const r of requests) if (!lastUserText(r).startsWith(mark)) requests[kept++] = r;
  requests.length = kept;
}
