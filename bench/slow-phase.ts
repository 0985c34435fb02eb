/**
 * One phase of the `slow` part (bench/slow.ts): triggers runs at once, waits until every one has closed, and samples
 * the stack meanwhile (the workers' RSS, every process's CPU, the provider's calls), with the Temporal server's
 * request and persistence counters before and after.
 */
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import type { runTask } from '../workflows/run-task';
import { cpuSeconds, percentile, round, rssMb } from './measure';

const SAMPLE_MS = 250;
/** The timeline logged per phase, in buckets of this many seconds. */
const BUCKET_S = 5;

/** The fake's view of the slow task's calls in the current phase; `arrived` and `answered` are times (ms). */
export interface Calls {
  inFlight: number;
  peak: number;
  arrived: number[];
  answered: number[];
  total: number;
  /** The calls' client ports: one per connection. */
  ports: Set<number>;
}
export const noCalls = (): Calls => ({ inFlight: 0, peak: 0, arrived: [], answered: [], total: 0, ports: new Set() });

export interface PhaseInput {
  client: Client;
  signed: string;
  workflowId: (run: string) => string;
  temporalMetricsUrl: string;
  /** Runs are named `<name>-<i>`. */
  name: string;
  runs: number;
  triggerConcurrency: number;
  /** Worker processes whose RSS is sampled, by name. */
  workers: Record<string, number>;
  /** Every process of the stack, by name, whose CPU is sampled. */
  procs: Record<string, number>;
  calls: Calls;
  log: (msg: string) => void;
}

interface Sample {
  at: number;
  rss: Record<string, number>;
  cpu: Record<string, number>;
}

const cpuOf = (procs: Record<string, number>) => Object.fromEntries(Object.entries(procs).map(([k, pid]) => [k, cpuSeconds(pid)]));

/** CPU seconds each process, and the whole machine (`machine`), has used so far. */
export const cpuNow = (procs: Record<string, number>): Record<string, number> => ({ ...cpuOf(procs), machine: machineCpuSeconds() });

/** Mean cores each process, and the whole machine, used over the next `seconds`. */
export async function coresBusy(procs: Record<string, number>, seconds: number): Promise<Record<string, number>> {
  const before = cpuNow(procs);
  await sleep(seconds * 1000);
  const after = cpuNow(procs);
  return Object.fromEntries(Object.keys(after).map((k) => [k, round((after[k]! - before[k]!) / seconds, 3)]));
}

/** Waits until the processes are idle (under a tenth of a core over half a second), at most 30 s: how long it took. */
export async function settle(procs: Record<string, number>): Promise<number> {
  const began = performance.now();
  const sum = () => Object.values(cpuOf(procs)).reduce((a, b) => a + b, 0);
  for (;;) {
    const before = sum();
    await sleep(500);
    if ((sum() - before) / 0.5 < 0.1 || performance.now() - began > 30_000) return round((performance.now() - began) / 1000);
  }
}

/** CPU seconds the whole machine has been busy (user, nice, system, irq, softirq; from /proc/stat, 10 ms ticks). */
function machineCpuSeconds(): number {
  const [user, nice, system, , , irq, softirq] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq!) / 100;
}

export async function measurePhase(p: PhaseInput) {
  const samples: Sample[] = [];
  let done = false;
  const sampling = (async () => {
    for (;;) {
      const rss = Object.fromEntries(await Promise.all(Object.entries(p.workers).map(async ([k, pid]) => [k, await rssMb(pid)] as const)));
      samples.push({ at: performance.now(), rss, cpu: cpuNow(p.procs) });
      if (done) return;
      await sleep(SAMPLE_MS);
    }
  })();
  const countersBefore = await temporalCounters(p.temporalMetricsUrl);
  const limit = pLimit(p.triggerConcurrency);
  const triggered: number[] = [];
  const triggerMs: number[] = [];
  const closed: number[] = [];
  const failures: string[] = [];
  let retried503 = 0;
  let notReady = 0;
  const start = performance.now();
  const settled = await Promise.allSettled(
    Array.from({ length: p.runs }, async (_, i) => {
      const run = `${p.name}-${i}`;
      const outcome = await limit(() => trigger(p.signed, run));
      retried503 += outcome.retried;
      if (outcome.failure) {
        failures.push(outcome.failure);
        return;
      }
      triggered.push(performance.now());
      triggerMs.push(triggered.at(-1)! - outcome.began);
      const result = await p.client.workflow.getHandle<typeof runTask>(p.workflowId(run)).result();
      if (result.status !== 'ready') notReady++;
      closed.push(performance.now());
    }),
  );
  done = true;
  await sampling;
  const countersAfter = await temporalCounters(p.temporalMetricsUrl);
  const thrown = settled.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (thrown) throw thrown.reason;

  const seconds = (at: number) => round((at - start) / 1000);
  const first = samples[0]!;
  const last = samples.at(-1)!;
  const phaseSeconds = (last.at - first.at) / 1000;
  logTimeline(p, start, samples, { triggered, arrived: p.calls.arrived, answered: p.calls.answered, closed });
  return {
    closedSeconds: seconds(Math.max(...closed)),
    firstClosedSeconds: seconds(Math.min(...closed)),
    triggeredSeconds: seconds(Math.max(...triggered)),
    triggerMs: { p50: round(percentile(triggerMs, 50)), p99: round(percentile(triggerMs, 99)), max: round(Math.max(...triggerMs)) },
    retried503,
    /** Triggers that failed after the 503 retries (their runs are not waited for); the first's answer. */
    failedTriggers: failures.length,
    firstFailure: failures[0],
    notReady,
    callsArrivedSeconds: { first: seconds(Math.min(...p.calls.arrived)), last: seconds(Math.max(...p.calls.arrived)) },
    lastAnsweredSeconds: seconds(Math.max(...p.calls.answered)),
    rssPeakMb: Object.fromEntries(Object.keys(p.workers).map((k) => [k, Math.max(...samples.map((s) => s.rss[k]!))])),
    /** Mean cores each process (and the whole machine, others' work included) used over the whole phase. */
    coresBusy: Object.fromEntries(Object.keys(last.cpu).map((k) => [k, round((last.cpu[k]! - first.cpu[k]!) / phaseSeconds, 2)])),
    /** CPU each process used over the whole phase per run (10 ms ticks). */
    cpuMsPerRun: Object.fromEntries(Object.keys(p.procs).map((k) => [k, round(((last.cpu[k]! - first.cpu[k]!) * 1000) / p.runs)])),
    /** The Temporal server's frontend requests (`rpc:`) and persistence operations (`db:`) per run, those ≥ 0.1. */
    temporalPerRun: perRun(countersBefore, countersAfter, p.runs),
  };
}

/** Triggers one run, retrying a 503 as a client would (up to 5 attempts, like run.ts's `run`). */
export async function trigger(signed: string, run: string): Promise<{ began: number; retried: number; failure?: string }> {
  const began = performance.now();
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(signed, { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': run }, body: JSON.stringify({ text: run }) });
    if (res.status === 503 && attempt < 5) {
      await res.arrayBuffer();
      await sleep(100 * attempt);
      continue;
    }
    const body = await res.text();
    if (res.status !== 201 && res.status !== 200) return { began, retried: attempt - 1, failure: `${run}: ${res.status} ${body.slice(0, 300)}` };
    return { began, retried: attempt - 1 };
  }
}

/**
 * The Temporal server's counters: frontend requests (`rpc:<operation>`), persistence operations (`db:<operation>`),
 * and the persistence operations' total latency in seconds (`dbSeconds`).
 */
export async function temporalCounters(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(url)).text();
  const counts: Record<string, number> = {};
  for (const [, metric, labels, value] of text.matchAll(/^(service_requests|persistence_requests|persistence_latency_sum)\{([^}]*)\} (\S+)$/gm)) {
    if (metric === 'service_requests' && !labels!.includes('service_name="frontend"')) continue;
    const op = /operation="([^"]+)"/.exec(labels!)?.[1];
    const key = metric === 'persistence_latency_sum' ? 'dbSeconds' : `${metric === 'service_requests' ? 'rpc' : 'db'}:${op}`;
    counts[key] = (counts[key] ?? 0) + Number(value);
  }
  return counts;
}

/** Counters per run (those ≥ 0.1), and the mean persistence operation's latency in ms (`dbMeanMs`). */
function perRun(before: Record<string, number>, after: Record<string, number>, runs: number): Record<string, number> {
  const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
  const out = Object.keys(after).filter((k) => k !== 'dbSeconds').map((k) => [k, round(delta(k) / runs, 2)] as const);
  const dbOps = Object.keys(after).filter((k) => k.startsWith('db:')).reduce((n, k) => n + delta(k), 0);
  return { ...Object.fromEntries(out.filter(([, n]) => n >= 0.1).sort(([a], [b]) => a.localeCompare(b))), dbMeanMs: round((delta('dbSeconds') * 1000) / dbOps, 2) };
}

/** Logs what happened in each bucket of the phase: triggers answered, calls arrived and answered, runs closed, cores. */
function logTimeline(p: PhaseInput, start: number, samples: Sample[], events: Record<string, number[]>) {
  const buckets = Math.ceil((samples.at(-1)!.at - start) / 1000 / BUCKET_S);
  const count = (times: number[]) => Array.from({ length: buckets }, (_, b) => times.filter((t) => Math.floor((t - start) / 1000 / BUCKET_S) === b).length);
  p.log(`  ${p.name}: per ${BUCKET_S} s from the first trigger:`);
  for (const [what, times] of Object.entries(events)) p.log(`    ${what.padEnd(9)} ${count(times).join(' ')}`);
  for (const k of Object.keys(samples[0]!.cpu)) {
    const cores = Array.from({ length: buckets }, (_, b) => {
      const inBucket = samples.filter((s) => Math.floor((s.at - start) / 1000 / BUCKET_S) === b);
      if (inBucket.length < 2) return '-';
      return ((inBucket.at(-1)!.cpu[k]! - inBucket[0]!.cpu[k]!) / ((inBucket.at(-1)!.at - inBucket[0]!.at) / 1000)).toFixed(2);
    });
    p.log(`    ${`${k} cores`.padEnd(9)} ${cores.join(' ')}`);
  }
}
