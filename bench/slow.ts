/**
 * The `slow` part: 1,000 runs triggered at once against a model that answers after 10 s, beside the same runs against
 * the instant model. A worker keeps every waiting provider call in flight (WORKER_MAX_PROVIDER_CALLS), so the target is
 * all of them closed within 1.5 × max(10 s, the instant runs' time). Also: the provider's peak concurrent calls, the
 * worker's memory per call in flight, the same slow phase with a second worker process, and what 1,000 waiting
 * (heartbeating) calls cost each process, measured apart with calls the provider holds (bench/slow-held.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import pLimit from 'p-limit';
import { runWorkflowId } from '../src/temporal/ids';
import { lastUserText, openaiText, type RecordedRequest } from '../test/helpers/fake-provider';
import { round, rssMb } from './measure';
import { measureHeld } from './slow-held';
import { measurePhase, noCalls, settle, trigger } from './slow-phase';
import { startChild, type PartDeps } from './stack';

const RUNS = 1000;
const DELAY_MS = 10_000;
/** Triggers in flight at once, as a client's pool would send "all at once"; a 503 (a dependency busy) is retried. */
const TRIGGER_CONCURRENCY = 200;
const TARGET_FACTOR = 1.5;
const TASK = 'slow';
/** The slow task's prompt begins so: how the fake tells its requests from the other parts' (the run name follows). */
const PROMPT_MARK = 'Slow:';
/** Instant runs with two workers polling before the two-worker phase. */
const WARM_UP_RUNS = 100;
/** Runs of the two-worker phase whose history is read to see which worker made the provider call. */
const IDENTITY_SAMPLE = 100;

type Measured = Awaited<ReturnType<typeof measurePhase>>;
export type PhaseFigures = Omit<Measured, 'rssPeakMb'> & {
  providerCalls: number;
  /** Connections the worker(s) opened to the provider (the calls' distinct client ports). */
  providerConnections: number;
  peakConcurrentCalls: number;
  /** Per worker process: RSS before the phase, and the largest sampled during it. */
  workerRssMb: Record<string, { idle: number; peak: number }>;
  /** All workers' (peak − idle) RSS over the peak concurrent calls. */
  kibPerRunInFlight: number;
};
export interface SlowFigures {
  runs: number;
  delayMs: number;
  triggerConcurrency: number;
  instant: PhaseFigures;
  oneWorker: PhaseFigures;
  twoWorkers: PhaseFigures & { providerCallsByWorker: Record<string, number> };
  held: Awaited<ReturnType<typeof measureHeld>>;
  target: { limitSeconds: number; oneWorker: boolean; twoWorkers: boolean };
}

export async function benchSlowModel({ stack, api, pids, otherwise, log }: PartDeps): Promise<SlowFigures> {
  const signed = await setUp(api);
  let calls = noCalls();
  const mine = new Set<RecordedRequest>();
  let release = () => {};
  const released = new Promise<void>((r) => (release = r));
  stack.fake.script(async (req) => {
    const text = lastUserText(req);
    if (!text.startsWith(PROMPT_MARK)) return otherwise(req);
    mine.add(req);
    const run = text.slice(PROMPT_MARK.length).trim();
    const counted = calls;
    counted.total++;
    counted.ports.add(req.remotePort);
    if (run.startsWith('instant-')) return openaiText(`done ${run}`);
    counted.arrived.push(performance.now());
    counted.peak = Math.max(counted.peak, ++counted.inFlight);
    // The delay here rather than as the reply's `delayMs`: the count drops in the turn the fake writes the reply.
    await (run.startsWith('held-') ? released : sleep(DELAY_MS));
    counted.inFlight--;
    counted.answered.push(performance.now());
    return openaiText(`done ${run}`);
  });
  const phase = async (name: string, workers: Record<string, number>, procs: Record<string, number>): Promise<PhaseFigures> => {
    log(`  ${name}: the stack settled in ${await settle(procs)} s; ${RUNS} runs...`);
    const idleRss = Object.fromEntries(await Promise.all(Object.entries(workers).map(async ([k, pid]) => [k, await rssMb(pid)] as const)));
    calls = noCalls();
    const measured = await measurePhase({
      client: stack.client, signed, workflowId, temporalMetricsUrl: stack.temporalMetricsUrl, name, runs: RUNS,
      triggerConcurrency: TRIGGER_CONCURRENCY, workers, procs, calls, log,
    });
    const { rssPeakMb, ...rest } = measured;
    const growthMb = Object.keys(workers).reduce((n, k) => n + rssPeakMb[k]! - idleRss[k]!, 0);
    log(`  ${name}: all closed after ${rest.closedSeconds} s (triggers answered after ${rest.triggeredSeconds} s), peak ${calls.peak} calls in flight`);
    log(`  ${name}: Temporal per run: ${Object.entries(rest.temporalPerRun).map(([k, n]) => `${k} ${n}`).join(', ')}`);
    return {
      ...rest,
      providerCalls: calls.total,
      providerConnections: calls.ports.size,
      peakConcurrentCalls: calls.peak,
      workerRssMb: Object.fromEntries(Object.keys(workers).map((k) => [k, { idle: round(idleRss[k]!), peak: round(rssPeakMb[k]!) }])),
      kibPerRunInFlight: round((growthMb * 1024) / calls.peak),
    };
  };
  // This process too (the triggers, 1,000 waits for results, the fake provider): it shares the machine's cores.
  const procs = { ...pids, bench: process.pid };
  try {
    // The slow phase first: the worker's RSS grows from where the warm-up left it, not from the instant phase's
    // high-water mark (V8 keeps much of a grown heap).
    const oneWorker = await phase('one', { worker: stack.workerPid }, procs);
    const instant = await phase('instant', { worker: stack.workerPid }, procs);
    log(`  held: the stack settled in ${await settle(procs)} s; ${RUNS} runs whose calls the provider holds...`);
    calls = noCalls();
    const held = await measureHeld({
      client: stack.client, signed, workflowId, temporalMetricsUrl: stack.temporalMetricsUrl, runs: RUNS,
      triggerConcurrency: TRIGGER_CONCURRENCY, procs, calls, release, log,
    });
    log('  starting a second worker process...');
    const second = startChild('src/worker.ts', [], stack.env, [], 'worker-2');
    let twoWorkers: SlowFigures['twoWorkers'];
    try {
      await whenPolling(stack.client, stack.env.TEMPORAL_TASK_QUEUE!, second);
      // Like the first worker, the second has run some runs before it is measured (its code compiled, its pools open).
      await Promise.all(Array.from({ length: WARM_UP_RUNS }, (_, i) => warmUpRun(stack.client, signed, `instant-warm2-${i}`)));
      const workers = { worker: stack.workerPid, worker2: second.pid! };
      const figures = await phase('two', workers, { ...procs, worker2: second.pid! });
      twoWorkers = { ...figures, providerCallsByWorker: await callsByWorker(stack.client, workers, api, log) };
    } finally {
      await stopChild(second);
    }
    const limitSeconds = round(TARGET_FACTOR * Math.max(DELAY_MS / 1000, instant.closedSeconds));
    const met = (p: PhaseFigures) => p.closedSeconds <= limitSeconds && p.failedTriggers === 0 && p.notReady === 0;
    const target = { limitSeconds, oneWorker: met(oneWorker), twoWorkers: met(twoWorkers) };
    return { runs: RUNS, delayMs: DELAY_MS, triggerConcurrency: TRIGGER_CONCURRENCY, instant, oneWorker, twoWorkers, held, target };
  } finally {
    stack.fake.script(otherwise);
    // The fake keeps every request it parsed; nothing reads these again.
    const requests = stack.fake.requests;
    let kept = 0;
    for (const r of requests) if (!mine.has(r)) requests[kept++] = r;
    requests.length = kept;
  }
}

const workflowId = (run: string) => runWorkflowId({ owner: 'bench', profile: 'default', task: TASK, run });

/** Creates the slow task in the default profile: its signed URL. */
async function warmUpRun(client: Client, signed: string, run: string): Promise<void> {
  const { failure } = await trigger(signed, run);
  if (failure) throw new Error(`warming up the second worker: ${failure}`);
  await client.workflow.getHandle(workflowId(run)).result();
}

async function setUp(api: PartDeps['api']): Promise<string> {
  const task = { runner: 'openai', openai: { prompt: `${PROMPT_MARK} {{ text }}`, model: 'bench' }, settings: { key: 'sk-bench-task-key' } };
  const put = await api(`/api/tasks/~/default/${TASK}`, { method: 'PUT', body: JSON.stringify(task) });
  if (put.status !== 201 && put.status !== 200) throw new Error(`creating the slow task answered ${put.status}: ${await put.text()}`);
  const res = await api(`/api/tasks/~/default/${TASK}/signed`, { method: 'POST' });
  if (res.status !== 200) throw new Error(`signing the slow task answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { url: string }).url;
}

/** Resolves once the worker process polls the queue for workflow and activity tasks (its identity is `pid@host`). */
async function whenPolling(client: Client, taskQueue: string, child: ChildProcess): Promise<void> {
  const { TASK_QUEUE_TYPE_WORKFLOW, TASK_QUEUE_TYPE_ACTIVITY } = temporal.api.enums.v1.TaskQueueType;
  const until = performance.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the second worker exited with ${child.exitCode} (see its log)`);
    const polling = await Promise.all(
      [TASK_QUEUE_TYPE_WORKFLOW, TASK_QUEUE_TYPE_ACTIVITY].map(async (taskQueueType) => {
        const { pollers } = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType });
        return (pollers ?? []).some((p) => p.identity?.startsWith(`${child.pid}@`));
      }),
    );
    if (polling.every(Boolean)) return;
    if (performance.now() > until) throw new Error('the second worker did not poll within 120 s');
    await sleep(500);
  }
}

/** SIGTERM (the worker shuts down gracefully), SIGKILL if it has not exited within 30 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if ((await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)])) === false) child.kill('SIGKILL');
}

/**
 * Which worker made the provider call of every tenth run of the two-worker phase (the activity's identity). A run
 * whose history cannot be read counts as `unreadable`, and its record's status is logged.
 */
async function callsByWorker(client: Client, workers: Record<string, number>, api: PartDeps['api'], log: PartDeps['log']): Promise<Record<string, number>> {
  const byPid = new Map(Object.entries(workers).map(([k, pid]) => [String(pid), k]));
  const counts: Record<string, number> = {};
  const limit = pLimit(10);
  await Promise.all(
    Array.from({ length: IDENTITY_SAMPLE }, (_, i) =>
      limit(async () => {
        const run = `two-${(i * RUNS) / IDENTITY_SAMPLE}`;
        let k: string;
        try {
          const { events } = await client.workflow.getHandle(workflowId(run)).fetchHistory();
          const identity = events?.find((e) => e.activityTaskStartedEventAttributes?.identity)?.activityTaskStartedEventAttributes?.identity ?? '';
          k = byPid.get(identity.split('@')[0]!) ?? 'unknown';
        } catch (err) {
          k = 'unreadable';
          const record = await (await api(`/api/runs/bench/default/${TASK}/${run}`)).text();
          log(`  the history of ${run} cannot be read (${(err as Error).message}); its record: ${record.slice(0, 300)}`);
        }
        counts[k] = (counts[k] ?? 0) + 1;
      }),
    ),
  );
  return counts;
}

/** The part's small tables and verdict line, for bench/run.ts's output. */
export function printSlowModel(r: SlowFigures) {
  const all = [r.instant, r.oneWorker, r.twoWorkers];
  const slow = [r.oneWorker, r.twoWorkers];
  const rss = (m: Record<string, { idle: number; peak: number }>) => Object.values(m).map((x) => `${x.idle} → ${x.peak}`).join(' + ');
  const procs = [...new Set(all.flatMap((p) => Object.keys(p.cpuMsPerRun)))];
  console.log(`\nSlow model: ${r.runs} runs triggered at once (${r.triggerConcurrency} in flight), the model answering after ${r.delayMs / 1000} s\n`);
  printTable(
    [`${r.runs} runs at once`, 'instant model', `${r.delayMs / 1000} s model, 1 worker`, `${r.delayMs / 1000} s model, 2 workers`],
    [
      ['all runs closed after', ...all.map((p) => `${p.closedSeconds} s`)],
      ['first run closed after', ...all.map((p) => `${p.firstClosedSeconds} s`)],
      ['triggers answered after', ...all.map((p) => `${p.triggeredSeconds} s`)],
      ['trigger p50 / p99', ...all.map((p) => `${p.triggerMs.p50} / ${p.triggerMs.p99} ms`)],
      ['503s retried, triggers failed', ...all.map((p) => `${p.retried503}, ${p.failedTriggers}`)],
      ['runs not ready', ...all.map((p) => `${p.notReady}`)],
      ['provider calls (peak at once)', `${r.instant.providerCalls}`, ...slow.map((p) => `${p.providerCalls} (${p.peakConcurrentCalls})`)],
      ['provider connections opened', ...all.map((p) => `${p.providerConnections}`)],
      ['calls arrived between', '—', ...slow.map((p) => `${p.callsArrivedSeconds.first} – ${p.callsArrivedSeconds.last} s`)],
      ['worker RSS idle → peak (MB)', ...all.map((p) => rss(p.workerRssMb))],
      ['worker memory per run in flight', '—', ...slow.map((p) => `${p.kibPerRunInFlight} KiB`)],
      ...procs.map((k) => [`CPU ms per run: ${k}`, ...all.map((p) => (p.cpuMsPerRun[k] === undefined ? '—' : `${p.cpuMsPerRun[k]}`))]),
      ['machine cores busy (others too)', ...all.map((p) => `${p.coresBusy.machine}`)],
      ['heartbeats per run (Temporal)', ...all.map((p) => `${p.temporalPerRun['rpc:RecordActivityTaskHeartbeat'] ?? 0}`)],
      [`provider calls by worker (of ${IDENTITY_SAMPLE})`, '—', '—', Object.entries(r.twoWorkers.providerCallsByWorker).map(([k, n]) => `${k} ${n}`).join(', ')],
    ],
  );
  const failure = all.find((p) => p.firstFailure)?.firstFailure;
  if (failure) console.log(`First failed trigger: ${failure}`);
  const verdict = (ok: boolean, p: PhaseFigures) => `${p.closedSeconds} s, ${ok ? 'met' : 'MISSED'}`;
  console.log(
    `Verdict (every slow run closed, ready, within ${TARGET_FACTOR} × max(${r.delayMs / 1000} s, instant ${r.instant.closedSeconds} s) = ${r.target.limitSeconds} s): ` +
      `1 worker ${verdict(r.target.oneWorker, r.oneWorker)}; 2 workers ${verdict(r.target.twoWorkers, r.twoWorkers)}`,
  );
  const h = r.held;
  console.log(`\n${h.heldCalls} calls held at the provider, 1 worker: ${h.windowSeconds} s once all had arrived (after ${h.allArrivedSeconds} s; ${h.arrivedInWindow} arrived meanwhile)\n`);
  printTable(
    ['while the calls wait', 'held', 'idle before'],
    [
      ...Object.keys(h.coresBusy).map((k) => [`cores busy: ${k}${k === 'machine' ? ' (others too)' : ''}`, `${h.coresBusy[k]}`, `${h.idleCoresBusy[k]}`]),
      ['heartbeats per second (Temporal)', `${h.heartbeatsPerSecond}`, '—'],
      ['Temporal CPU per heartbeat', `${h.temporalMsPerHeartbeat} ms`, '—'],
    ],
  );
}

function printTable(header: string[], rows: string[][]) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}
