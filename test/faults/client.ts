import { expect } from 'chai';
import type { Api, ApiResponse } from '../helpers/api';
import { api, readResponse } from '../helpers/api';
import { until } from '../helpers/runs';
import { ledger, type AcceptedRun, type RunExpectation } from './ledger';

/** No request of the suite waits longer: every answer is bounded (issue 12), so this only catches a hang. */
const REQUEST_TIMEOUT_MS = 30_000;

/** An answer, and how long it took from the request to its whole body (ms). */
export interface TimedResponse extends ApiResponse {
  ms: number;
}

/** The test helpers' `Api`, whose answers are timed. */
export type CountingApi = { [K in keyof Api]: Api[K] extends (...args: infer A) => Promise<ApiResponse> ? (...args: A) => Promise<TimedResponse> : Api[K] };

/**
 * fetch, counted in the ledger: every answer by status and time taken, 5xx checked, a refused connection as
 * `unreachable`.
 */
export async function countedFetch(url: string, init: RequestInit = {}): Promise<TimedResponse> {
  const { pathname } = new URL(url);
  const started = performance.now();
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') {
      ledger.noAnswer(init.method ?? 'GET', pathname);
      throw new Error(`${init.method ?? 'GET'} ${pathname}: no answer within ${REQUEST_TIMEOUT_MS} ms`);
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    ledger.unreachable(init.method ?? 'GET', pathname, cause?.code ?? cause?.message ?? (err as Error).message);
    throw err;
  }
  const answer = { ...(await readResponse(res)), ms: Math.round(performance.now() - started) };
  ledger.request(init.method ?? 'GET', pathname, answer.status, answer.text, answer.headers.get('retry-after'), answer.ms);
  return answer;
}

/** The API as a user with a session sees it (test/helpers/api.ts's `api`), every request counted and timed. */
export function countingApi(sessionId: string, baseUrl: string): CountingApi {
  // `api` answers what `send` answers: countedFetch's timed answers.
  return api(sessionId, baseUrl, countedFetch) as CountingApi;
}

/** Asserts that each answer came within `ledger.slowAfterMs` (DEPENDENCY_TIMEOUT_MS and a margin). */
export function expectPrompt(...answers: Array<[what: string, answer: TimedResponse]>) {
  for (const [what, answer] of answers) expect(answer.ms, `${what}: answered ${answer.status} after ${answer.ms} ms`).to.be.below(ledger.slowAfterMs);
}

/** `run/<owner>/<profile>/<task>/<run>` from a Variant B run URL. */
export function workflowIdOf(runUrl: string): string {
  const [, api, runs, ...rest] = new URL(runUrl).pathname.split('/');
  if (api !== 'api' || runs !== 'runs' || rest.length !== 4) throw new Error(`not a run URL: ${runUrl}`);
  return `run/${rest.join('/')}`;
}

/** Triggers through a signed URL with a run name, counted; a 201 or 200 makes the run accepted. */
export async function trigger(signedUrl: string, text: string, run: string, expectation: RunExpectation = { status: 'ready' }) {
  const res = await countedFetch(signedUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': run }, body: JSON.stringify({ text }) });
  if (res.status === 200 || res.status === 201) ledger.accept({ url: res.body.url, workflowId: workflowIdOf(res.body.url), expect: expectation, text });
  return res;
}

/**
 * Triggers until the service answers for the run (201 or 200), as a client that got a 503 or no answer would: with
 * the same run name, so a run the failed attempt may have recorded is the one that runs.
 */
export async function triggerUntilAccepted(signedUrl: string, text: string, run: string, expectation: RunExpectation = { status: 'ready' }, timeoutMs = 60_000) {
  return until(
    `the trigger of ${run} to be accepted`,
    async () => {
      const res = await trigger(signedUrl, text, run, expectation).catch(() => undefined);
      if (res && res.status !== 200 && res.status !== 201 && res.status !== 503) throw new Error(`trigger of ${run}: ${res.status} ${res.text}`);
      if (res?.status === 200 || res?.status === 201) return res;
      // As a well-behaved client: after Retry-After (or half a second when there was no answer), with jitter.
      const wait = Number(res?.headers.get('retry-after') ?? 0.5) * 1000;
      await new Promise((r) => setTimeout(r, wait * (1 + Math.random())));
      return undefined;
    },
    timeoutMs,
  );
}

/** Every user's client, by user name: runs are read as their owners. */
export const owners = new Map<string, CountingApi>();

export const ownerOf = (run: AcceptedRun) => {
  const api = owners.get(run.workflowId.split('/')[1]!);
  if (!api) throw new Error(`no client for the owner of ${run.workflowId}`);
  return api;
};
