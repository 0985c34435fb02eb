import { expect } from 'chai';
import pLimit from 'p-limit';
import { until } from '../helpers/runs';
import { ownerOf } from './client';
import { faultStack, temporalClient } from './harness';
import { closedRun, ledger, type AcceptedRun } from './ledger';

/** A closed run's entries: one start and one end (a final answer, or an error with a readable reason). */
export function endedOnce(run: any): string | undefined {
  const entries = (run?.results ?? []) as any[];
  const msgs = entries.map((e) => e.msg);
  const starts = msgs.filter((m) => m === 'run started').length;
  const finals = entries.filter((e) => e.msg === 'final answer').length;
  const errors = entries.filter((e) => typeof e.error === 'string').length;
  if (starts !== 1) return `${starts} "run started" entries`;
  if (finals + errors !== 1) return `${finals} final answers and ${errors} errors`;
  if (run.status === 'ready' && finals !== 1) return 'ready without a final answer';
  if (run.status === 'error') {
    const reason = entries.at(-1)?.error;
    if (typeof reason !== 'string' || !readable(reason)) return `error without a readable reason as its last entry: ${JSON.stringify(entries.at(-1))}`;
  }
  return undefined;
}

/** A reason a person can read: a sentence, not a stack, an object dump or an internal message. */
export const readable = (reason: string) =>
  reason.trim().length > 3 && reason.length < 2000 && !/\n\s+at |\[object Object\]|undefined|ECONNREFUSED|Mongo[A-Za-z]*Error/.test(reason);

/** Polls runs, each as its owner (16 at a time), until each is closed; answers during a fault (503, no API) are waited out. */
export async function waitForRuns(runs: AcceptedRun[], timeoutMs = 120_000, options: { partial?: boolean } = {}): Promise<Map<string, any>> {
  const closed = new Map<string, any>();
  const limit = pLimit(16);
  const deadline = Date.now() + timeoutMs;
  while (closed.size < runs.length) {
    await Promise.all(
      runs
        .filter((r) => !closed.has(r.workflowId))
        .map((r) =>
          limit(async () => {
            const res = await ownerOf(r).get(new URL(r.url).pathname).catch(() => undefined);
            if (res?.status === 200 && (res.body.status === 'ready' || res.body.status === 'error')) closed.set(r.workflowId, res.body);
          }),
        ),
    );
    if (closed.size === runs.length) break;
    if (Date.now() > deadline) {
      if (options.partial) break;
      const open = runs.filter((r) => !closed.has(r.workflowId)).map((r) => r.workflowId);
      throw new Error(`${open.length} runs did not close within ${timeoutMs} ms: ${open.slice(0, 10).join(', ')}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return closed;
}

/**
 * Waits for the runs and checks that each ended once, as its scenario expected, and stays as it ended: each is read
 * closed, then read again once its workflow has closed and the API's record cache (RUN_RECORD_CACHE_MS) has let the
 * first read go, and both reads must agree. A write after the end (one that timed out and landed late, a call made
 * again) would end the run a second time at the same entry, replacing the first ending: only the comparison shows it.
 * The first closed read is kept on the run (`closed`) for the final accounts to compare again.
 */
export async function expectAllEndOnce(runs: AcceptedRun[], timeoutMs?: number) {
  const first = await waitForRuns(runs, timeoutMs);
  for (const r of runs) r.closed ??= closedRun(first.get(r.workflowId));
  const temporal = await temporalClient();
  const limit = pLimit(8);
  await Promise.all(runs.map((r) => limit(() => until(`the workflow of ${r.workflowId} to close`, async () => (await temporal.workflow.getHandle(r.workflowId).describe()).status.name !== 'RUNNING', 60_000))));
  await new Promise((r) => setTimeout(r, Number(faultStack().env.RUN_RECORD_CACHE_MS) + 500));
  const closed = await waitForRuns(runs, 30_000);
  for (const r of runs) {
    const run = closed.get(r.workflowId);
    for (const [read, seen] of [['first read', first.get(r.workflowId)], ['second read', run]] as const) {
      const why = endedOnce(seen);
      expect(why, `${r.workflowId} (${read}): ${why} — ${JSON.stringify(seen?.results)}`).to.equal(undefined);
    }
    expect(closedRun(run), `${r.workflowId}: the run changed after it was read closed`).to.deep.equal(r.closed);
    if (r.expect.status !== 'any') expect(run.status, `${r.workflowId}: ${JSON.stringify(run.results)}`).to.equal(r.expect.status);
    if (r.expect.reason && run.status === 'error') expect(run.results.at(-1).error, r.workflowId).to.match(r.expect.reason);
  }
  return closed;
}

/** The runs accepted so far in a scenario. */
export const runsOf = (scenario: string) => [...ledger.runs.values()].filter((r) => r.scenario === scenario);
