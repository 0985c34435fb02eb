/**
 * The `fairness` part (issue 33): a model that answers after 200 ms; user B starts 20 runs, one a second, each timed
 * on its own (trigger → ready), first with the service idle, then while user A floods it: A triggers 2,000 runs as fast
 * as the API takes them (200 triggers in flight, well within LIVE_RUNS_PER_USER), and B starts once half of them are
 * in. Target: B's p50 during the flood ≤ 2 × B's idle p50 + 1 s. A second flood with A's task at `settings.priority`
 * 5 and B's at 1; a build whose API rejects or ignores that setting says so and skips the round.
 *
 * The bench's Temporal server dispatches activities eagerly (`system.enableActivityEagerExecution`, as `npm run dev`):
 * an eagerly dispatched activity skips the task queue's matching, and so its priority and fairness.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import { connectDb } from '../src/store/connect';
import { createSession } from '../src/store/sessions';
import { runWorkflowId } from '../src/temporal/ids';
import { lastUserText, openaiText } from '../test/helpers/fake-provider';
import { percentile, round } from './measure';
import { ELSEWHERE, recordNotReady, waitForRun } from './run-outcome';
import { settle, trigger } from './slow-phase';
import { apiAs, forgetRequests, signedTask } from './signed-task';
import type { PartDeps } from './stack';

export const FLOOD_RUNS = 2000;
const B_RUNS = 20;
const MODEL_MS = 200;
/** A's client: trigger requests in flight at once. */
const FLOOD_CONCURRENCY = 200;
const TASK = 'fair';
const USERS = { a: 'fair-a', b: 'fair-b' } as const;
/** The fairness task's prompt begins so: how the fake tells its requests from the other parts'. */
const PROMPT_MARK = 'Fair:';
/** Target: B's p50 during a flood at most this factor of its idle p50, plus `TARGET_PLUS_MS`. */
const TARGET_FACTOR = 2;
const TARGET_PLUS_MS = 1000;

export interface FloodRound {
  label: string;
  /** `settings.priority` of A's and B's tasks; absent: neither set. */
  priority?: { a: number; b: number };
  /** Why the round did not run (the build does not take the setting). */
  skipped?: string;
  bMs?: { p50: number; p99: number; max: number };
  /** B's trigger answered (the run recorded and started), p50 and p99: the rest of bMs is Temporal's, the worker's and the model's. */
  bTriggerMs?: { p50: number; p99: number };
  met?: boolean;
  bNotReady?: number;
  firstBNotReady?: string;
  /** A's runs triggered but not yet closed when B's first run started, and when its last one ended. */
  floodOpenAtBStart?: number;
  floodOpenAtBEnd?: number;
  /** Since A's first trigger: all A's triggers answered, all A's runs closed. */
  floodTriggeredSeconds?: number;
  floodClosedSeconds?: number;
  /** A's triggers answered 503 (Temporal or the database busy) and tried again, as a client would. */
  retried503?: number;
  failedTriggers?: number;
  firstFailure?: string;
}

export interface FairnessFigures {
  modelMs: number;
  flood: number;
  bRuns: number;
  /** `triggerP50`: B's trigger answered (the run recorded and started), p50. */
  idle: { p50: number; p99: number; triggerP50: number; notReady: number; firstNotReady?: string };
  targetMs: number;
  rounds: FloodRound[];
}

export async function benchFairness({ stack, pids, otherwise, log }: PartDeps, options: { flood?: number } = {}): Promise<FairnessFigures> {
  const flood = options.flood ?? FLOOD_RUNS;
  const db = await connectDb(stack.env.MONGO_URL!);
  const apis = {
    a: apiAs(stack.apiUrl, (await createSession(db.models, USERS.a, 24)).id),
    b: apiAs(stack.apiUrl, (await createSession(db.models, USERS.b, 24)).id),
  };
  const procs = { ...pids, bench: process.pid };
  const workflowId = (user: keyof typeof USERS, run: string) => runWorkflowId({ owner: USERS[user], profile: 'default', task: TASK, run });
  stack.fake.script((req) => (lastUserText(req).startsWith(PROMPT_MARK) ? { ...openaiText('fair'), delayMs: MODEL_MS } : otherwise(req)));

  /** Saves both users' tasks (with `priority` when given): their signed URLs, or why the build did not take it. */
  const tasks = async (priority?: { a: number; b: number }): Promise<{ a: string; b: string } | { skipped: string }> => {
    const signed: Record<string, string> = {};
    for (const user of ['a', 'b'] as const) {
      const settings = priority ? { priority: priority[user] } : {};
      const made = await signedTask(apis[user], TASK, `${PROMPT_MARK} {{ text }}`, settings);
      if ('rejected' in made) return { skipped: `priority not supported by this build (saving the task answered ${made.rejected})` };
      if (priority && made.task.settings?.priority !== priority[user]) return { skipped: 'priority not supported by this build (the saved task shows no settings.priority)' };
      signed[user] = made.signed;
    }
    return { a: signed.a!, b: signed.b! };
  };

  /** B's runs, one a second, each timed from its trigger to its run closed: ms each, and how many were not ready. */
  const bRuns = async (signed: string, prefix: string) => {
    const ms: number[] = [];
    const triggerMs: number[] = [];
    const notReady: string[] = [];
    await Promise.all(
      Array.from({ length: B_RUNS }, async (_, i) => {
        await sleep(i * 1000);
        const run = `${prefix}-${i}`;
        const began = performance.now();
        const { failure } = await trigger(signed, run);
        if (failure) throw new Error(`user B's trigger failed: ${failure}`);
        triggerMs.push(performance.now() - began);
        const closed = await waitForRun(stack.client, workflowId('b', run));
        ms.push(performance.now() - began);
        const reason = closed === ELSEWHERE ? await recordNotReady(apis.b, `/api/runs/${USERS.b}/default/${TASK}/${run}`) : closed;
        if (reason) notReady.push(reason);
      }),
    );
    return { ms, triggerMs, notReady };
  };

  try {
    const plain = await tasks();
    if ('skipped' in plain) throw new Error(`creating the fairness tasks: ${plain.skipped}`);
    log(`  idle: the stack settled in ${await settle(procs)} s; user B's ${B_RUNS} runs, one a second...`);
    const idleRuns = await bRuns(plain.b, 'idle');
    const idle = { p50: round(percentile(idleRuns.ms, 50)), p99: round(percentile(idleRuns.ms, 99)), triggerP50: round(percentile(idleRuns.triggerMs, 50)), notReady: idleRuns.notReady.length, firstNotReady: idleRuns.notReady[0] };
    const targetMs = round(TARGET_FACTOR * idle.p50 + TARGET_PLUS_MS);
    log(`  idle: B's p50 ${idle.p50} ms, p99 ${idle.p99} ms; target during a flood: p50 ≤ ${targetMs} ms`);

    const rounds: FloodRound[] = [];
    for (const [label, priority] of [['flood', undefined], ['flood, A at priority 5, B at 1', { a: 5, b: 1 }]] as const) {
      const signed = priority ? await tasks(priority) : plain;
      if ('skipped' in signed) {
        log(`  ${label}: ${signed.skipped}`);
        rounds.push({ label, priority, skipped: signed.skipped });
        continue;
      }
      log(`  ${label}: the stack settled in ${await settle(procs)} s; user A triggers ${flood} runs, user B starts once half are in...`);
      const prefix = priority ? 'prio' : 'flood';
      const r = await floodRound({ flood, signedA: signed.a, startB: () => bRuns(signed.b, `${prefix}-b`), open: () => db.models.LiveRun.countDocuments({ owner: USERS.a }), prefix });
      const bMs = { p50: round(percentile(r.b.ms, 50)), p99: round(percentile(r.b.ms, 99)), max: round(Math.max(...r.b.ms)) };
      const bTriggerMs = { p50: round(percentile(r.b.triggerMs, 50)), p99: round(percentile(r.b.triggerMs, 99)) };
      const met = bMs.p50 <= targetMs && r.b.notReady.length === 0;
      log(`  ${label}: B's p50 ${bMs.p50} ms, p99 ${bMs.p99} ms (${met ? 'met' : 'not met'}; its trigger answered p50 ${bTriggerMs.p50} ms, p99 ${bTriggerMs.p99} ms); A's runs open when B started ${r.openAtBStart}, when B ended ${r.openAtBEnd}; A's all closed after ${r.closedSeconds} s`);
      rounds.push({
        label, priority, bMs, bTriggerMs, met, bNotReady: r.b.notReady.length, firstBNotReady: r.b.notReady[0], floodOpenAtBStart: r.openAtBStart, floodOpenAtBEnd: r.openAtBEnd,
        floodTriggeredSeconds: r.triggeredSeconds, floodClosedSeconds: r.closedSeconds, failedTriggers: r.failures.length, firstFailure: r.failures[0], retried503: r.retried503,
      });
    }
    return { modelMs: MODEL_MS, flood, bRuns: B_RUNS, idle, targetMs, rounds };
  } finally {
    await db.close();
    stack.fake.script(otherwise);
    forgetRequests(stack.fake.requests, PROMPT_MARK);
  }
}

/** A's flood, with B's runs started once half of A's triggers are answered; resolves once all A's runs have closed. */
async function floodRound(p: {
  flood: number;
  signedA: string;
  prefix: string;
  startB: () => Promise<{ ms: number[]; triggerMs: number[]; notReady: string[] }>;
  /** A's runs not closed yet (its live places), read from the store: 2,000 clients each waiting on Temporal for its run would load Temporal as no user's flood does. */
  open: () => Promise<number>;
}) {
  const limit = pLimit(FLOOD_CONCURRENCY);
  const failures: string[] = [];
  let triggered = 0;
  let retried503 = 0;
  let halfIn = () => {};
  const half = new Promise<void>((r) => (halfIn = r));
  const began = performance.now();
  let triggeredAt = began;
  const flood = Promise.all(
    Array.from({ length: p.flood }, async (_, i) => {
      const run = `${p.prefix}-a-${i}`;
      const { failure, retried } = await limit(() => trigger(p.signedA, run));
      retried503 += retried;
      if (failure) failures.push(failure);
      if (++triggered === Math.ceil(p.flood / 2)) halfIn();
      if (triggered === p.flood) triggeredAt = performance.now();
    }),
  );
  await half;
  const openAtBStart = await p.open();
  const b = await p.startB();
  const openAtBEnd = await p.open();
  await flood;
  while ((await p.open()) > 0) await sleep(1000);
  const closedSeconds = round((performance.now() - began) / 1000);
  return { b, openAtBStart, openAtBEnd, triggeredSeconds: round((triggeredAt - began) / 1000), closedSeconds, failures, retried503 };
}

/** The part's table and verdict, for bench/run.ts's output. */
export function printFairness(r: FairnessFigures) {
  console.log(`\nFairness: user B's ${r.bRuns} runs, one a second, trigger → ready, against a ${r.modelMs} ms model; user A floods with ${r.flood} runs`);
  console.log(`B idle: p50 ${r.idle.p50} ms, p99 ${r.idle.p99} ms, trigger answered p50 ${r.idle.triggerP50} ms (not ready ${r.idle.notReady}); target during a flood: p50 ≤ 2 × idle + 1 s = ${r.targetMs} ms\n`);
  if (r.idle.firstNotReady) console.log(`  first of B's idle runs not ready: ${r.idle.firstNotReady}`);
  for (const f of r.rounds) {
    if (f.skipped) {
      console.log(`- ${f.label}: ${f.skipped}`);
      continue;
    }
    console.log(
      `- ${f.label}: B p50 ${f.bMs!.p50} ms, p99 ${f.bMs!.p99} ms, max ${f.bMs!.max} ms: ${f.met ? 'met' : 'not met'}; trigger answered p50 ${f.bTriggerMs?.p50} ms, p99 ${f.bTriggerMs?.p99} ms` +
        ` (A's runs open when B started ${f.floodOpenAtBStart}, when it ended ${f.floodOpenAtBEnd}; A's triggers answered after` +
        ` ${f.floodTriggeredSeconds} s, A's runs all closed after ${f.floodClosedSeconds} s; B not ready ${f.bNotReady}; A's 503s retried ${f.retried503}, triggers failed ${f.failedTriggers})`,
    );
    if (f.firstFailure) console.log(`  first failed trigger of A: ${f.firstFailure}`);
    if (f.firstBNotReady) console.log(`  first of B's runs not ready: ${f.firstBNotReady}`);
  }
}
