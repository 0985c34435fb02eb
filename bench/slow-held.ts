/**
 * What waiting calls cost, apart from everything else: `runs` runs whose provider calls the fake holds until told,
 * measured once every call has arrived, for a window long enough for each to heartbeat about once (the SDK sends a
 * call's first heartbeat at once, then at most one per 80 % of the heartbeat timeout). On a small machine the slow
 * phase never has ~1,000 calls waiting with nothing else going on: its calls arrive over as long as the runs take
 * to start. (No memory figure here: the worker's RSS after the earlier phases says little about these runs.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import pLimit from 'p-limit';
import { round } from './measure';
import { coresBusy, cpuNow, temporalCounters, trigger, type Calls } from './slow-phase';

/** Measured once all calls have arrived and this long has passed (their workflow tasks done). */
const QUIET_MS = 2_000;
const WINDOW_S = 15;

export interface HeldInput {
  client: Client;
  signed: string;
  workflowId: (run: string) => string;
  temporalMetricsUrl: string;
  runs: number;
  triggerConcurrency: number;
  procs: Record<string, number>;
  calls: Calls;
  /** Answers every held call. */
  release: () => void;
  log: (msg: string) => void;
}

export async function measureHeld(p: HeldInput) {
  const idleCoresBusy = await coresBusy(p.procs, 3);
  const start = performance.now();
  const limit = pLimit(p.triggerConcurrency);
  const runs = Array.from({ length: p.runs }, (_, i) => `held-${i}`);
  const failures = (await Promise.all(runs.map((run) => limit(() => trigger(p.signed, run))))).flatMap((t) => (t.failure ? [t.failure] : []));
  if (failures.length) p.log(`  held: ${failures.length} triggers failed, the first: ${failures[0]}`);
  const expected = p.runs - failures.length;
  const closing = Promise.all(runs.map((run) => p.client.workflow.getHandle(p.workflowId(run)).result().catch(() => undefined)));
  try {
    while (p.calls.inFlight < expected && performance.now() - start < 120_000) await sleep(100);
    const allArrivedSeconds = round((performance.now() - start) / 1000);
    p.log(`  held: ${p.calls.inFlight} calls waiting after ${allArrivedSeconds} s; measuring ${WINDOW_S} s of waiting...`);
    await sleep(QUIET_MS);
    const countersBefore = await temporalCounters(p.temporalMetricsUrl);
    const cpuBefore = cpuNow(p.procs);
    const arrivedBefore = p.calls.arrived.length;
    const windowStart = performance.now();
    await sleep(WINDOW_S * 1000);
    const seconds = (performance.now() - windowStart) / 1000;
    const cpuAfter = cpuNow(p.procs);
    const countersAfter = await temporalCounters(p.temporalMetricsUrl);
    const held = p.calls.inFlight;
    const heartbeatsPerSecond = (countersAfter['rpc:RecordActivityTaskHeartbeat']! - (countersBefore['rpc:RecordActivityTaskHeartbeat'] ?? 0)) / seconds;
    const busy = Object.fromEntries(Object.keys(cpuAfter).map((k) => [k, round((cpuAfter[k]! - cpuBefore[k]!) / seconds, 3)]));
    return {
      heldCalls: held,
      /** From the first trigger until every call was waiting at the provider. */
      allArrivedSeconds,
      /** Calls that arrived during the window (0: nothing but waiting happened). */
      arrivedInWindow: p.calls.arrived.length - arrivedBefore,
      windowSeconds: round(seconds),
      heartbeatsPerSecond: round(heartbeatsPerSecond),
      coresBusy: busy,
      idleCoresBusy,
      /** Temporal's CPU above idle per heartbeat: what each waiting call's heartbeats cost the server. */
      temporalMsPerHeartbeat: round(((busy.temporal! - idleCoresBusy.temporal!) * 1000) / heartbeatsPerSecond, 2),
    };
  } finally {
    p.release();
    await closing;
  }
}
