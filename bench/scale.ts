/**
 * The `scale` part (issue 33): completed runs per second (trigger to closed, instant model) with 32, 256 and 1,000 runs
 * **kept in flight** (a new run is triggered as each one closes), beside the bare one-activity workflow
 * (bench/baseline, the throughput part's baseline) at the same load on the same server, with each process's CPU per
 * run. Target: ours ≥ 80 % of bare at every load.
 *
 * A round triggers `runsPerRound` runs; the rate is taken over the round's steady window, from its `n`-th run closed
 * (from then on every run in flight was started by a close: the first `n`, triggered at once, are through the API
 * and the queues) to the last close that let a new run start (all that while, exactly `n` were in flight), so neither
 * the ramp-up (a burst of `n` triggers) nor the drain of the last `n` runs weighs on it. A round too short for that
 * (`--scale-runs` below 2n + 2) takes its window from its first close. Rounds go ours, bare, bare, ours (a linear
 * drift of the machine hits both sides alike), each after the stack has settled. CPU per run: each process's CPU
 * over its whole rounds over the runs closed in them.
 */
import pLimit from 'p-limit';
import { runWorkflowId } from '../src/temporal/ids';
import { cpuNow, settle, trigger } from './slow-phase';
import { round } from './measure';
import { ELSEWHERE, recordNotReady, waitForRun } from './run-outcome';
import { forgetRequests, signedTask } from './signed-task';
import type { PartDeps } from './stack';

export const SCALE_SIZES = [32, 256, 1000];
const TARGET_RATIO = 0.8;
const ORDER = ['ours', 'bare', 'bare', 'ours'] as const;
type Side = (typeof ORDER)[number];
/** A round's runs: three times as many as are in flight (a steady window of `n` closes), at least 160. */
const runsPerRoundFor = (n: number) => Math.max(160, 3 * n);
/** Trigger requests (and bare workflow starts) in flight at once, as a client's connection pool would send them. */
const TRIGGER_CONCURRENCY = 200;
const TASK = 'scale';
/** The scale task's prompt and the bare runs' prompt begin so: how its requests to the fake are told apart. */
const PROMPT_MARK = 'Scale:';

interface RoundFigures {
  side: Side;
  runs: number;
  seconds: number;
  /** Closed runs per second over the steady window (NaN when the round has too few runs for one). */
  steadyPerSecond: number;
  /** Runs over the round's whole time, first trigger to last close. */
  perSecond: number;
}

export interface SideFigures {
  /** Over the side's steady windows (its whole rounds when they had none). */
  runsPerSecond: number;
  wholeRoundsPerSecond: number;
  cpuMsPerRun: Record<string, number>;
  /** Triggers answered 503 (Temporal or the database busy) and tried again, as a client would. */
  retried503: number;
  failedTriggers: number;
  firstFailure?: string;
  notReady: number;
  firstNotReady?: string;
  /** Runs whose workflow returned `closedElsewhere` (the model call's end closed the record); their records are checked. */
  closedElsewhere: number;
}

export interface ScaleLoad {
  inFlight: number;
  runsPerRound: number;
  ours: SideFigures;
  bare: SideFigures;
  ratio: number;
  met: boolean;
  rounds: RoundFigures[];
}

export interface ScaleFigures {
  mode: 'kept in flight';
  target: number;
  loads: ScaleLoad[];
}

export async function benchScale({ stack, api, pids, log }: PartDeps, options: { sizes?: number[]; runsPerRound?: number } = {}): Promise<ScaleFigures> {
  const made = await signedTask(api, TASK, `${PROMPT_MARK} {{ text }}`);
  if ('rejected' in made) throw new Error(`creating the scale task answered ${made.rejected}`);
  const procs = { ...pids, bench: process.pid };
  const workflowId = (run: string) => runWorkflowId({ owner: 'bench', profile: 'default', task: TASK, run });
  const sides: Record<Side, How> = {
    ours: {
      start: async (run, totals) => {
        const { failure, retried } = await trigger(made.signed, run);
        totals.retried503 += retried;
        return failure;
      },
      close: (run) => waitForRun(stack.client, workflowId(run)),
      check: async (runs) => {
        const limit = pLimit(10);
        const reasons = await Promise.all(runs.map((run) => limit(() => recordNotReady(api, `/api/runs/bench/default/${TASK}/${run}`))));
        return reasons.filter((r): r is string => r !== undefined);
      },
    },
    bare: {
      start: async (id) => {
        await stack.client.workflow.start('bareRun', { taskQueue: 'bench-baseline', workflowId: id, args: [`${PROMPT_MARK} bare`] });
        return undefined;
      },
      close: async (id) => {
        await stack.client.workflow.getHandle(id).result();
        return undefined;
      },
    },
  };
  const loads: ScaleLoad[] = [];
  try {
    for (const n of options.sizes ?? SCALE_SIZES) {
      const runsPerRound = options.runsPerRound ?? runsPerRoundFor(n);
      const rounds: RoundFigures[] = [];
      const totals = { ours: emptyTotals(), bare: emptyTotals() };
      for (const [r, side] of ORDER.entries()) {
        const settled = await settle(procs);
        const before = cpuNow(procs);
        const t = totals[side];
        const { figures, elsewhere } = await keepInFlight(n, runsPerRound, side, (i) => `scale-${side}-${n}-${r}-${i}`, sides[side], t);
        const after = cpuNow(procs);
        for (const k of Object.keys(after)) t.cpuSeconds[k] = (t.cpuSeconds[k] ?? 0) + after[k]! - before[k]!;
        // Outside the measured time: the records of the runs whose workflow left its end to them.
        t.closedElsewhere += elsewhere.length;
        if (sides[side].check) t.notReady.push(...(await sides[side].check(elsewhere)));
        rounds.push(figures);
        log(`  ${n} in flight, ${side}: ${runsPerRound} runs in ${figures.seconds} s, ${figures.steadyPerSecond}/s steady, ${figures.perSecond}/s whole (after the stack settled in ${settled} s)`);
      }
      const ours = sideFigures(totals.ours);
      const bare = sideFigures(totals.bare);
      const ratio = round(ours.runsPerSecond / bare.runsPerSecond, 2);
      loads.push({ inFlight: n, runsPerRound, ours, bare, ratio, met: ratio >= TARGET_RATIO && ours.failedTriggers === 0 && ours.notReady === 0, rounds });
    }
  } finally {
    forgetRequests(stack.fake.requests, PROMPT_MARK);
  }
  return { mode: 'kept in flight', target: TARGET_RATIO, loads };
}

/**
 * How a side starts a run (a failed trigger's answer, or undefined), waits for it to close (why it is not ready,
 * ELSEWHERE, or undefined) and, after the round, checks the records of the runs closed elsewhere (why each is not ready).
 */
interface How {
  start: (id: string, totals: Totals) => Promise<string | undefined>;
  close: (id: string) => Promise<string | undefined>;
  check?: (ids: string[]) => Promise<string[]>;
}

const emptyTotals = () => ({ closed: 0, steadyCloses: 0, steadySeconds: 0, seconds: 0, cpuSeconds: {} as Record<string, number>, failures: [] as string[], notReady: [] as string[], closedElsewhere: 0, retried503: 0 });
type Totals = ReturnType<typeof emptyTotals>;

/** One round: `runs` runs with `n` in flight, a new one started as each closes. Adds what it saw to `totals`. */
async function keepInFlight(n: number, runs: number, side: Side, name: (i: number) => string, how: How, totals: Totals): Promise<{ figures: RoundFigures; elsewhere: string[] }> {
  const slots = pLimit(n);
  const starts = pLimit(TRIGGER_CONCURRENCY);
  const closedAt: number[] = [];
  const elsewhere: string[] = [];
  const began = performance.now();
  await Promise.all(
    Array.from({ length: runs }, (_, i) =>
      slots(async () => {
        const failure = await starts(() => how.start(name(i), totals));
        if (failure) {
          totals.failures.push(failure);
          return;
        }
        const closed = await how.close(name(i));
        if (closed === ELSEWHERE) elsewhere.push(name(i));
        else if (closed) totals.notReady.push(closed);
        closedAt.push(performance.now());
      }),
    ),
  );
  const seconds = (performance.now() - began) / 1000;
  // Closes 1 to runs − n each started a new run: between the first and the last of them, n were in flight; from the
  // n-th on, every one of them had been started by a close.
  const lastSteady = Math.min(runs - n, closedAt.length) - 1;
  const firstSteady = lastSteady - (n - 1) >= 2 ? n - 1 : 0;
  const steadyCloses = lastSteady - firstSteady;
  const steadySeconds = steadyCloses >= 1 ? (closedAt[lastSteady]! - closedAt[firstSteady]!) / 1000 : 0;
  const steadyPerSecond = steadySeconds > 0 ? steadyCloses / steadySeconds : NaN;
  totals.closed += closedAt.length;
  totals.seconds += seconds;
  if (steadySeconds > 0) {
    totals.steadyCloses += steadyCloses;
    totals.steadySeconds += steadySeconds;
  }
  return { figures: { side, runs, seconds: round(seconds), steadyPerSecond: round(steadyPerSecond), perSecond: round(closedAt.length / seconds) }, elsewhere };
}

function sideFigures(t: Totals): SideFigures {
  const whole = t.closed / t.seconds;
  return {
    runsPerSecond: round(t.steadySeconds > 0 ? t.steadyCloses / t.steadySeconds : whole),
    wholeRoundsPerSecond: round(whole),
    cpuMsPerRun: Object.fromEntries(Object.entries(t.cpuSeconds).map(([k, s]) => [k, round((s * 1000) / Math.max(1, t.closed))])),
    retried503: t.retried503,
    failedTriggers: t.failures.length,
    firstFailure: t.failures[0],
    notReady: t.notReady.length,
    firstNotReady: t.notReady[0],
    closedElsewhere: t.closedElsewhere,
  };
}

/** The part's table and verdict, for bench/run.ts's output. */
export function printScale(r: ScaleFigures) {
  const procs = [...new Set(r.loads.flatMap((l) => Object.keys(l.ours.cpuMsPerRun)))];
  const cpu = (c: Record<string, number>) => procs.map((k) => `${k} ${c[k] ?? '—'}`).join(', ');
  console.log(`\nScale: runs kept in flight (a new trigger as each run closes), instant model; ours against the bare workflow, target ≥ ${r.target * 100} %\n`);
  const rows = r.loads.map((l) => [
    `${l.inFlight}`,
    `${l.ours.runsPerSecond} (${l.ours.wholeRoundsPerSecond})`,
    `${l.bare.runsPerSecond} (${l.bare.wholeRoundsPerSecond})`,
    `${Math.round(l.ratio * 100)} %, ${l.met ? 'met' : 'not met'}`,
    cpu(l.ours.cpuMsPerRun),
    cpu(l.bare.cpuMsPerRun),
  ]);
  const header = ['in flight', 'ours runs/s steady (whole)', 'bare runs/s steady (whole)', 'ours / bare', 'CPU ms per run, ours', 'CPU ms per run, bare'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  console.log("bare's worker runs inside the bench process (its CPU is under bench); machine: every process of the machine, other users' too");
  for (const l of r.loads) {
    console.log(`${l.inFlight} in flight: ${l.ours.closedElsewhere} of ours closed by the model call's end (the workflow returned closedElsewhere; their records checked); ${l.ours.retried503} triggers answered 503 and were retried`);
    if (l.ours.failedTriggers || l.ours.notReady) {
      console.log(`${l.inFlight} in flight: ${l.ours.failedTriggers} triggers failed (first: ${l.ours.firstFailure ?? '—'}), ${l.ours.notReady} runs not ready (first: ${l.ours.firstNotReady ?? '—'})`);
    }
  }
}
