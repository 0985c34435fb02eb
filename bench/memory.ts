/**
 * The `memory` part: the resident set (RSS) of the API and the worker after 1,000, 5,000 and 20,000 completed runs
 * (the other parts' runs count), each beside the V8 heap the process's main thread uses (prom-client's
 * `nodejs_heap_size_used_bytes`), so a growing heap tells itself apart from the rest of RSS; then heap snapshots of
 * the API compared by constructor (bench/heap-summary.ts): the measured API's after the last point, against a second
 * API process's after it served 1,000 runs.
 *
 * Not a snapshot of the measured API at the first point: writing one leaves the process's RSS up by about twice the
 * snapshot's size (V8 builds it with malloc, and glibc keeps the freed pages until a `malloc_trim`, which Node never
 * calls; measured: 167 → 331 MB for a 44 MB snapshot), which would swamp the growth measured after it.
 *
 * Each reading is the lowest RSS of a minute's samples, once a second, with the stack idle: what a process holds, not
 * the garbage its last runs left. Right after a load, RSS sits wherever each isolate's garbage collection stands (the
 * worker has one per thread): measured with `--trace-gc`, its main thread's heap held 258 MB with 102 MB live, and V8's
 * memory reducer gave the rest back 20 to 50 s into the idle minute (worker RSS 470 → 342 MB, API 174 → 144 MB). The
 * first sample, 2 s after the runs (the reading before), is kept beside it: a leak raises both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, waitForPort } from '../test/helpers/net';
import { formatGrowth, heapGrowth, summarizeHeap, type HeapGrowth } from './heap-summary';
import { inFlight, round } from './measure';
import { startChild, type startBenchStack } from './stack';

export const MEMORY_POINTS = [1000, 5000, 20_000] as const;
/** The target: each process's RSS at the last point within this of the first point's. */
const FLAT = 0.2;
/** Classes of the heap comparison kept and printed. */
const TOP_CLASSES = 15;
/** Runs the second API serves before its snapshot (the first point's count). */
const SECOND_API_RUNS = MEMORY_POINTS[0];
/** Time for the stack to settle (the runs' last writes, timers) before a reading. */
const SETTLE_MS = 2000;
/** A reading's samples, one a second from `SETTLE_MS` on: the memory reducer's first pass comes within it. */
const WINDOW_SAMPLES = 60;
const SAMPLE_EVERY_MS = 1000;

/** One process, in MB: RSS and its anonymous and file-backed parts (/proc), its main thread's V8 heap (/metrics). */
export interface ProcessMemory {
  rssMb: number;
  anonMb: number;
  fileMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  threads: number;
}

/** A reading: each process's sample of lowest RSS in the idle minute, and its RSS at the minute's start. */
export interface MemoryPoint {
  runs: number;
  api: ProcessMemory;
  worker: ProcessMemory;
  /** RSS in MB 2 s after the runs (the first sample), before any idle-time collection. */
  rssAtFirstSample: Rss;
}

type Rss = { api: number; worker: number };

export interface MemoryFigures {
  /** Runs done at the first point (the throughput part takes it between two rounds, so often over 1,000). */
  firstAfterRuns: number;
  /** RSS in MB at each point (the names the earlier 1,000 / 5,000 bench used). */
  after1000: Rss;
  after5000: Rss;
  after20000: Rss;
  /** RSS growth from the first point to the last (20,000 runs), as a fraction; the target is at most 0.2. */
  growth: Rss;
  /** The same growth from the first samples (2 s after the runs, what the bench read before 2026-11-27). */
  growthAtFirstSample: Rss;
  /** Growth from the first point to 5,000 runs (what `growth` measured before). */
  growthTo5000: Rss;
  verdict: { api: string; worker: string };
  /** After the warm-up (20 runs): what the processes hold before any load. */
  start: MemoryPoint;
  points: MemoryPoint[];
  /** The measured API's RSS right after its heap snapshot at the last point (what writing one costs). */
  apiRssAfterSnapshotMb: number;
  /** A second API's heap after 1,000 runs against the measured API's at the last point: what grew. */
  apiHeap: HeapGrowth;
}

export interface MemoryBenchDeps {
  stack: Awaited<ReturnType<typeof startBenchStack>>;
  /** Runs completed so far, by every part. */
  runs: () => number;
  /** Triggers a run of the bench task by name through the API at `apiUrl` (the stack's by default), waits for its end. */
  run: (name: string, apiUrl?: string) => Promise<void>;
  log: (msg: string) => void;
}

/**
 * The readings, taken when the bench gets there: `start()` after the warm-up, `firstIfDue()` between the throughput
 * part's rounds (the first point, once 1,000 runs are done), `finish()` drives the runs to each remaining point, then
 * takes the heap snapshots. The stack must have been started with `heapSnapshotDir`.
 */
export function memoryBench({ stack, runs, run, log }: MemoryBenchDeps) {
  const dir = stack.heapSnapshotDir;
  if (!dir) throw new Error('the memory part needs the stack started with heapSnapshotDir');
  let start: MemoryPoint | undefined;
  const points: MemoryPoint[] = [];

  const read = async (): Promise<MemoryPoint> => {
    await sleep(SETTLE_MS);
    const done = runs();
    const api: ProcessMemory[] = [];
    const worker: ProcessMemory[] = [];
    for (let i = 0; i < WINDOW_SAMPLES; i++) {
      if (i > 0) await sleep(SAMPLE_EVERY_MS);
      const [a, w] = await Promise.all([processMemory(stack.apiPid, `${stack.apiUrl}/metrics`), processMemory(stack.workerPid, stack.workerMetricsUrl)]);
      api.push(a);
      worker.push(w);
    }
    const lowest = (samples: ProcessMemory[]) => samples.reduce((low, s) => (s.rssMb < low.rssMb ? s : low));
    return { runs: done, api: lowest(api), worker: lowest(worker), rssAtFirstSample: { api: api[0]!.rssMb, worker: worker[0]!.rssMb } };
  };
  const takePoint = async () => {
    const point = await read();
    points.push(point);
    const { api, worker, rssAtFirstSample: first } = point;
    log(`  after ${point.runs} runs: RSS API ${round(api.rssMb)} MB (${round(first.api)} at first; heap ${round(api.heapUsedMb)}), worker ${round(worker.rssMb)} MB (${round(first.worker)} at first)`);
  };

  return {
    async start() {
      start = await read();
    },
    async firstIfDue() {
      if (points.length === 0 && runs() >= MEMORY_POINTS[0]) await takePoint();
    },
    async finish(): Promise<MemoryFigures> {
      for (const [i, target] of MEMORY_POINTS.entries()) {
        if (points.length > i) continue;
        log(`memory: driving to ${target.toLocaleString('en')} completed runs (now ${runs()})...`);
        await inFlight(Math.max(0, target - runs()), 32, (j) => run(`mem-${target}-${j}`));
        await takePoint();
      }
      const last = await apiHeapSnapshot({ pid: stack.apiPid, url: stack.apiUrl }, dir, `api-${runs()}runs`, log);
      const apiRssAfterSnapshotMb = (await processMemory(stack.apiPid)).rssMb;
      const first = await secondApiSnapshot(stack, dir, run, log);
      log(`memory: comparing the API's heap snapshots (${dir})...`);
      const apiHeap = heapGrowth(summarizeHeap(first), summarizeHeap(last), TOP_CLASSES, false);
      const [at1000, at5000, at20000] = points as [MemoryPoint, MemoryPoint, MemoryPoint];
      const rss = (p: MemoryPoint): Rss => ({ api: round(p.api.rssMb), worker: round(p.worker.rssMb) });
      const grown = (from: Rss, to: Rss): Rss => ({ api: round(to.api / from.api - 1, 2), worker: round(to.worker / from.worker - 1, 2) });
      const lowest = (p: MemoryPoint): Rss => ({ api: p.api.rssMb, worker: p.worker.rssMb });
      const growth = grown(lowest(at1000), lowest(at20000));
      const verdict = (g: number) => (g <= FLAT ? 'met' : 'not met');
      return {
        firstAfterRuns: at1000.runs,
        after1000: rss(at1000),
        after5000: rss(at5000),
        after20000: rss(at20000),
        growth,
        growthTo5000: grown(lowest(at1000), lowest(at5000)),
        growthAtFirstSample: grown(at1000.rssAtFirstSample, at20000.rssAtFirstSample),
        verdict: { api: verdict(growth.api), worker: verdict(growth.worker) },
        start: start!,
        points,
        apiRssAfterSnapshotMb: round(apiRssAfterSnapshotMb),
        apiHeap,
      };
    },
  };
}

/** The rows of the bench's main table. */
export function memoryRows(m: MemoryFigures): Array<[string, string, string, string]> {
  const at = m.points.map((p) => `${round(p.runs / 1000, 1)}k`).join(' / ');
  const row = (who: 'api' | 'worker', label: string): [string, string, string, string] => [
    `RSS ${label} after ${at} runs`,
    `${m.after1000[who]} / ${m.after5000[who]} / ${m.after20000[who]} MB`,
    '—',
    `≤ 20 % growth: ${m.verdict[who]} (${Math.round(m.growth[who] * 100)} %)`,
  ];
  return [row('api', 'API'), row('worker', 'worker')];
}

/** The readings at every point and what grew in the API's heap. */
export function printMemory(m: MemoryFigures) {
  const head = ['after runs', 'API RSS', 'at first', 'anon', 'heap used', 'external', 'worker RSS', 'at first', 'anon', 'file', 'heap used', 'threads'];
  const cells = (label: string, p: MemoryPoint) => [
    label,
    ...[p.api.rssMb, p.rssAtFirstSample.api, p.api.anonMb, p.api.heapUsedMb, p.api.externalMb, p.worker.rssMb, p.rssAtFirstSample.worker, p.worker.anonMb, p.worker.fileMb, p.worker.heapUsedMb].map((v) =>
      String(round(v)),
    ),
    String(p.worker.threads),
  ];
  const rows = [cells(`${m.start.runs} (start)`, m.start), ...m.points.map((p) => cells(String(p.runs), p))];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const pct = (g: number) => `${g >= 0 ? '+' : ''}${Math.round(g * 100)} %`;
  const [first, last] = [m.points[0]!, m.points[m.points.length - 1]!];
  console.log(
    "\nMemory in MB, each process's sample of lowest RSS in an idle minute (RSS and its anonymous and file-backed parts from /proc; heap: the main thread's V8 heap from /metrics), and its RSS at the minute's first sample, 2 s after the runs:",
  );
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  console.log(
    `Growth ${first.runs} → ${last.runs} runs: API RSS ${pct(m.growth.api)} (≤ 20 %: ${m.verdict.api}), heap ${pct(last.api.heapUsedMb / first.api.heapUsedMb - 1)}; ` +
      `worker RSS ${pct(m.growth.worker)} (≤ 20 %: ${m.verdict.worker}), heap ${pct(last.worker.heapUsedMb / first.worker.heapUsedMb - 1)}`,
  );
  console.log(`At the first samples: API RSS ${pct(m.growthAtFirstSample.api)}, worker RSS ${pct(m.growthAtFirstSample.worker)}`);
  console.log(`The API's RSS right after its heap snapshot: ${m.apiRssAfterSnapshotMb} MB (before: ${round(last.api.rssMb)} MB)`);
  console.log(`\nThe API's heap, a second API after ${SECOND_API_RUNS} runs → the measured one after ${last.runs} (${m.apiHeap.files.join(', ')}):`);
  for (const l of formatGrowth(m.apiHeap)) console.log(`  ${l}`);
}

/** RSS parts from /proc (Linux) and, given its metrics URL, the process's V8 heap. */
async function processMemory(pid: number, metricsUrl?: string): Promise<ProcessMemory> {
  const status = await fs.promises.readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => round(Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN) / 1024);
  const metrics = metricsUrl ? await (await fetch(metricsUrl)).text() : '';
  const bytes = (name: string) => round(Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN) / 2 ** 20);
  return {
    rssMb: kb('VmRSS'),
    anonMb: kb('RssAnon'),
    fileMb: kb('RssFile'),
    heapUsedMb: bytes('nodejs_heap_size_used_bytes'),
    heapTotalMb: bytes('nodejs_heap_size_total_bytes'),
    externalMb: bytes('nodejs_external_memory_bytes'),
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? NaN),
  };
}

/**
 * A second API process on a port of its own, sharing the stack: serves 1,000 runs, writes its heap snapshot, stops.
 * Its snapshot stands for the measured API's after the first point (see the top of this file).
 */
async function secondApiSnapshot(stack: MemoryBenchDeps['stack'], dir: string, run: MemoryBenchDeps['run'], log: (msg: string) => void): Promise<string> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = startChild('src/server.ts', [], { ...stack.env, PORT: String(port) }, ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`], 'server-2');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await waitForPort(port, 60_000);
    log(`memory: ${SECOND_API_RUNS} runs through a second API process, for its heap snapshot...`);
    await inFlight(SECOND_API_RUNS, 32, (j) => run(`mem-second-${j}`, url));
    await sleep(SETTLE_MS);
    return await apiHeapSnapshot({ pid: child.pid!, url }, dir, `second-api-${SECOND_API_RUNS}runs`, log);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * Signals an API (started with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>`) to write a heap snapshot and
 * waits for it: Node opens the file, then takes and writes the snapshot on the main thread, so once the file exists
 * and the API answers a request again, it is complete. Renames it `<name>.heapsnapshot`.
 */
async function apiHeapSnapshot(api: { pid: number; url: string }, dir: string, name: string, log: (msg: string) => void): Promise<string> {
  const before = new Set(fs.readdirSync(dir));
  const began = performance.now();
  process.kill(api.pid, 'SIGUSR2');
  let written: string | undefined;
  while (!(written = fs.readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f)))) {
    if (performance.now() - began > 60_000) throw new Error(`the API wrote no heap snapshot into ${dir} within 60 s`);
    await sleep(50);
  }
  await (await fetch(`${api.url}/metrics`)).text();
  const file = path.join(dir, `${name}.heapsnapshot`);
  fs.renameSync(path.join(dir, written), file);
  const mb = round(fs.statSync(file).size / 2 ** 20);
  log(`  heap snapshot of the API: ${file} (${mb} MB, ${round((performance.now() - began) / 1000)} s)`);
  return file;
}
