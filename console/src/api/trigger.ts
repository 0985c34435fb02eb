import { api, json, ok, send } from './client';

/**
 * The console triggers a Variant B task the one way the API offers a browser: through one of the task's signed URLs
 * (docs/runs.md, "Triggering"), made once per task and page load and kept in memory only.
 */
const signedUrls = new Map<string, Promise<string>>();

/** Same origin whatever PUBLIC_URL says: the page's CSP allows no other. */
const local = (url: string) => {
  const parsed = new URL(url, location.origin);
  return parsed.pathname + parsed.search;
};

function signedUrl(profile: string, task: string): Promise<string> {
  const key = `${profile}/${task}`;
  let url = signedUrls.get(key);
  if (!url) {
    url = ok(api.POST('/api/tasks/{user}/{profile}/{task}/signed', { params: { path: { user: '~', profile, task } } })).then((answer) => local(answer.url));
    url.catch(() => signedUrls.delete(key));
    signedUrls.set(key, url);
  }
  return url;
}

/** Starts a run with `data` (named `run` when given); returns the run's name. */
export async function triggerRun(profile: string, task: string, data: Record<string, unknown>, run?: string): Promise<string> {
  const url = await signedUrl(profile, task);
  const answer = await json<{ url: string }>(await send('POST', url, data, run ? { 'run-id': run } : {}));
  return decodeURIComponent(new URL(answer.url, location.origin).pathname.split('/').pop()!);
}

/** Forget the task's signed URL (after a revoke of all of them). */
export const forgetSignedUrl = (profile: string, task: string) => signedUrls.delete(`${profile}/${task}`);
