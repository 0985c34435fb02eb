/**
 * `npm run bench`: figures for runs against the dev stack with an instant fake provider, each beside a baseline
 * measured in the same run (absolute numbers vary on shared machines). Prints a table, writes bench/results.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectDb } from '../src/store/connect';
import { createLogger } from '../src/logger';
import { installTemporalRuntime } from '../src/temporal/runtime';
import { createSession } from '../src/store/sessions';
import { runWorkflowId } from '../src/temporal/ids';
import { lastUserText, openaiText, type Responder } from '../test/helpers/fake-provider';
import { childPids, cpuSeconds, get, hammer, inFlight, percentile, round, treeCpuSeconds } from './measure';
import { runningPid } from '../src/cli/cluster-postgres';
import { startBenchStack, startChild } from './stack';
import { parseArgs } from './args';
import { benchScale, printScale } from './scale';
import { benchFairness, printFairness } from './fairness';
import { benchServlets } from './servlets';
import { benchMcp, MCP_BENCH_ENV, printMcp } from './mcp';
import { benchLongRun, printLongRun } from './long';
import { benchSlowModel, printSlowModel } from './slow';
import { benchLiveStreams } from './live';
import { benchConsole, printConsole } from './console';
import { memoryBench, memoryRows, printMemory } from './memory';
import { benchMcpServer, mcpServerRows } from './mcp-server';
import { freePort, waitForPort } from '../test/helpers/net';
import { startOtlpSink } from './otlp-sink';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

/**
 * `npm run bench -- throughput live` measures only those parts (for work on one figure); no names: all of them.
 * `npm run bench -- mcp`: MCP tool calls against @modelcontextprotocol/server-everything, which the part starts on
 * loopback (bench/mcp.ts): the activity body against the SDK calling the server directly, Temporal's round trip
 * apart, and runs with one MCP call against runs with one servlet call.
 * `npm run bench -- console`: the console's run page with about 2,000 entries in headless Chromium, and followed runs'
 * cost (bench/console.ts).
 * `npm run bench -- scale`: runs/s with 32, 256 and 1,000 runs in flight beside the bare workflow (bench/scale.ts;
 * `--scale-sizes 32,256`, `--scale-runs 64` for a smoke run). `npm run bench -- fairness`: one user's runs while
 * another floods the service (bench/fairness.ts; `--flood 100`).
 * `--profile` also writes V8 CPU profiles of the API and the worker processes. `--temporal-memory`: the Temporal dev
 * server keeps its database in memory instead of in a file as `npm run dev` does (results say which). `--tracing`: the
 * API and the worker trace every run (OTEL_EXPORTER_OTLP_ENDPOINT, http/protobuf) into a loopback sink
 * (bench/otlp-sink.ts): `npm run bench -- throughput --tracing` beside `npm run bench -- throughput` is tracing's cost.
 */
const PARTS = ['serial', 'throughput', 'closed', 'live', 'memory', 'servlets', 'mcp', 'mcp-server', 'long', 'slow', 'console', 'scale', 'fairness'] as const;
const args = parseArgs(process.argv.slice(2));
const chosen = args.parts;
for (const name of chosen) if (!(PARTS as readonly string[]).includes(name)) throw new Error(`unknown part "${name}"; the parts are ${PARTS.join(', ')}`);
const profileDir = args.switches.has('--profile') ? path.join(os.tmpdir(), `ptr-bench-profiles-${process.pid}`) : undefined;
const temporalStore = args.switches.has('--cluster') ? 'cluster' : args.switches.has('--temporal-memory') ? 'memory' : 'file';
const wanted = (part: (typeof PARTS)[number]) => chosen.length === 0 || chosen.includes(part);
/** The memory part's heap snapshots of the API (kept: open them in Chrome DevTools). */
const heapSnapshotDir = wanted('memory') ? fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-bench-heap-')) : undefined;

async function main() {
  const servers = { file: 'Temporal dev server with its database in a file, FerretDB on SQLite', memory: 'Temporal dev server with its database in memory, FerretDB on SQLite', cluster: 'the cluster topology: temporal-server and FerretDB on PostgreSQL' }[temporalStore];
  log(`starting the stack (${servers}; one API and one worker process)...`);
  installTemporalRuntime(createLogger({ level: 'warn', name: 'bench' }));
  const otlp = args.switches.has('--tracing') ? await startOtlpSink() : undefined;
  const env = { ...(wanted('mcp') ? MCP_BENCH_ENV : {}), ...(otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } : {}) };
  const s = await startBenchStack({ profileDir, heapSnapshotDir, env, temporalStore });
  try {
    await measure(s, otlp?.received);
  } catch (err) {
    console.error('[bench] failed:', err);
    process.exitCode = 1;
  } finally {
    // Bounded: after a failure, pollers or runs may still be open. Then exit, whatever is left (a connection).
    const stopped = await Promise.race([s.stop().then(() => true, () => false), sleep(30_000).then(() => false)]);
    if (!stopped) log('the stack did not stop cleanly within 30 s; exiting anyway');
    if (profileDir) log(`CPU profiles of the API and the worker: ${profileDir}`);
    process.exit(process.exitCode ?? 0);
  }
}

async function measure(s: Awaited<ReturnType<typeof startBenchStack>>, traces?: { exports: number; bytes: number }) {
  const db = await connectDb(s.env.MONGO_URL!);
  const { id: session } = await createSession(db.models, 'bench', 24);
  const cookie = { cookie: `sessionId=${session}` };
  const api = (p: string, init: RequestInit = {}) =>
    fetch(`${s.apiUrl}${p}`, { ...init, headers: { 'content-type': 'application/json', ...cookie, ...(init.headers as object) } });
  const put = await api('/api/tasks/~/default/bench', { method: 'PUT', body: JSON.stringify({ runner: 'openai', openai: { prompt: 'Say {{ text }}', model: 'bench' }, settings: { key: 'sk-bench-task-key' } }) });
  if (put.status !== 201) throw new Error(`creating the task answered ${put.status}: ${await put.text()}`);
  const signedRes = await api('/api/tasks/~/default/bench/signed', { method: 'POST' });
  if (signedRes.status !== 200) throw new Error(`signing answered ${signedRes.status}: ${await signedRes.text()}`);
  const signed = ((await signedRes.json()) as { url: string }).url;
  // Live runs for the polling figure hang at the provider until the end; every other call answers at once.
  const echo: Responder = (req) => openaiText(`echo: ${lastUserText(req)}`);
  s.fake.script((req) => (lastUserText(req).includes('hold') ? { hang: true } : echo(req)));

  const workflowOf = (run: string) => s.client.workflow.getHandle(runWorkflowId({ owner: 'bench', profile: 'default', task: 'bench', run }));
  let runs = 0;
  let retried503 = 0;
  /** `apiUrl`: through another API process of the stack than its own. */
  const run = async (name: string, text = 'x', apiUrl?: string) => {
    const url = apiUrl ? `${apiUrl}${signed.slice(new URL(signed).origin.length)}` : signed;
    // Like a client: a 503 (the database busy) is retried; triggers are idempotent by name.
    let res: Response;
    for (let attempt = 1; ; attempt++) {
      res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': name }, body: JSON.stringify({ text }) });
      if (res.status !== 503 || attempt === 5) break;
      retried503++;
      await res.arrayBuffer();
      await sleep(100 * attempt);
    }
    if (res.status !== 201 && res.status !== 200) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    if (text !== 'hold') {
      await workflowOf(name).result();
      runs++;
    }
  };
  let bare = 0;
  const bareRun = async () => {
    await s.client.workflow.execute('bareRun', { taskQueue: 'bench-baseline', workflowId: `bare-${bare++}`, args: ['Say x'] });
  };

  const children = childPids();
  const childPid = (name: string) => {
    const pid = children.find((c) => c.comm.startsWith(name))?.pid;
    if (!pid) throw new Error(`no ${name} process among the bench's children`);
    return pid;
  };
  const pids: Record<string, number> = { api: s.apiPid, worker: s.workerPid, ferretdb: childPid('ferretdb'), temporal: childPid('temporal') };
  // On the cluster, PostgreSQL too: its postmaster and every backend (not the bench's children: pg_ctl detaches it).
  const postmaster = s.postgresDataDir ? runningPid(s.postgresDataDir) : undefined;
  if (s.postgresDataDir && !postmaster) throw new Error(`no PostgreSQL running on ${s.postgresDataDir}`);
  if (postmaster) pids.postgres = postmaster;
  /** CPU seconds each process of the stack has used so far. */
  const cpuNow = () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, pid === postmaster ? treeCpuSeconds(pid) : cpuSeconds(pid)]));
  /** CPU each process used while `work` ran, in ms per completed item (where a run's cost goes). */
  const cpuPerItem = async <T>(items: number, work: () => Promise<T>): Promise<{ result: T; cpuMsPerItem: Record<string, number> }> => {
    const before = cpuNow();
    const self = process.cpuUsage();
    const result = await work();
    const used = process.cpuUsage(self);
    const after = cpuNow();
    const cpuMsPerItem: Record<string, number> = {};
    for (const k of Object.keys(pids)) cpuMsPerItem[k] = ((after[k]! - before[k]!) * 1000) / items;
    cpuMsPerItem.bench = (used.user + used.system) / 1000 / items;
    return { result, cpuMsPerItem };
  };

  const memory = wanted('memory') ? memoryBench({ stack: s, runs: () => runs, run: (name, apiUrl) => run(name, 'x', apiUrl), log }) : undefined;

  log('warming up...');
  await inFlight(20, 4, (i) => run(`warm-${i}`));
  await inFlight(20, 4, () => bareRun());
  await memory?.start();

  const results: Record<string, unknown> = {
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${round(os.totalmem() / 2 ** 30, 0)} GiB, Node ${process.version}`,
    date: new Date().toISOString(),
    temporal_store: s.temporalStore,
    tracing: traces ? 'on (OTLP http/protobuf to a loopback sink)' : 'off',
  };

  if (wanted('serial')) {
    log('serial trigger→ready latency (100 each)...');
    const serial = (await inFlight(100, 1, (i) => run(`serial-${i}`))).latencies;
    const serialBare = (await inFlight(100, 1, () => bareRun())).latencies;
    results.serialLatencyMs = { p50: round(percentile(serial, 50)), p99: round(percentile(serial, 99)), baselineP50: round(percentile(serialBare, 50)), baselineP99: round(percentile(serialBare, 99)) };
  }

  if (wanted('throughput')) {
    // Rounds in the order ours, bare, bare, ours, twice (a linear drift of the machine hits both alike), each after
    // the previous round's background work (Temporal's tasks, caches) has settled.
    const ORDER = ['ours', 'bare', 'bare', 'ours', 'ours', 'bare', 'bare', 'ours'] as const;
    const PER_ROUND = 320;
    const perSide = (ORDER.length / 2) * PER_ROUND;
    log(`throughput with 32 in flight (${perSide} each, in rounds of ${PER_ROUND}: ${ORDER.join(', ')})...`);
    const totals = { ours: { seconds: 0, cpuMs: {} as Record<string, number> }, bare: { seconds: 0, cpuMs: {} as Record<string, number> } };
    /** Waits until the stack is idle (under a tenth of a core over half a second), at most 30 s: how long it took. */
    const settle = async () => {
      const began = performance.now();
      const sum = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);
      for (;;) {
        const before = sum(cpuNow());
        await sleep(500);
        if ((sum(cpuNow()) - before) / 0.5 < 0.1 || performance.now() - began > 30_000) return round((performance.now() - began) / 1000);
      }
    };
    const rounds: Array<{ side: string; perSecond: number }> = [];
    for (const [r, which] of ORDER.entries()) {
      // The memory part's first point once 1,000 runs are done: like its others, 2 s after the runs before it.
      await memory?.firstIfDue();
      const settled = await settle();
      const { result, cpuMsPerItem } = await cpuPerItem(PER_ROUND, () => inFlight(PER_ROUND, 32, (i) => (which === 'ours' ? run(`tput-${r}-${i}`) : bareRun())));
      totals[which].seconds += result.seconds;
      // Each round's own rate: how far apart the rounds of one side are says how much the machine drifted.
      log(`  ${which}: ${PER_ROUND} in ${round(result.seconds)} s, ${round(PER_ROUND / result.seconds)}/s (after the stack settled in ${settled} s)`);
      rounds.push({ side: which, perSecond: round(PER_ROUND / result.seconds) });
      for (const [k, ms] of Object.entries(cpuMsPerItem)) totals[which].cpuMs[k] = (totals[which].cpuMs[k] ?? 0) + (ms * PER_ROUND) / perSide;
    }
    const perRun = (cpuMs: Record<string, number>) => Object.fromEntries(Object.entries(cpuMs).map(([k, v]) => [k, round(v, 2)]));
    const ours = perSide / totals.ours.seconds;
    const bareRate = perSide / totals.bare.seconds;
    results.throughput32 = {
      runsPerSecond: round(ours),
      baselinePerSecond: round(bareRate),
      ratio: round(ours / bareRate, 2),
      cpuMsPerRun: perRun(totals.ours.cpuMs),
      baselineCpuMsPerRun: perRun(totals.bare.cpuMs),
      rounds,
    };
  }

  if (wanted('closed')) {
    log('closed-run reads...');
    await run('closed-0');
    const closedPath = '/api/runs/bench/default/bench/closed-0';
    const closedBody = await (await api(closedPath)).text();
    const bodyFile = path.join(os.tmpdir(), `ptr-bench-body-${process.pid}.json`);
    fs.writeFileSync(bodyFile, closedBody);
    const barePort = await freePort();
    const bareKoa = startChild('bench/bare-koa.ts', [String(barePort), bodyFile], {});
    await waitForPort(barePort, 30_000);
    const closed = await hammer(`${s.apiUrl}${closedPath}`, 16, 5, cookie);
    const closedBare = await hammer(`http://127.0.0.1:${barePort}/`, 16, 5);
    bareKoa.kill();
    fs.rmSync(bodyFile, { force: true });
    results.closedRunReads = { perSecond: round(closed.perSecond), p99Ms: round(closed.p99), baselinePerSecond: round(closedBare.perSecond), baselineP99Ms: round(closedBare.p99), ratio: round(closed.perSecond / closedBare.perSecond, 2) };
  }

  if (wanted('live')) {
    log('200 pollers on 20 live runs (250 ms poll interval, like the Python client)...');
    for (let i = 0; i < 20; i++) await run(`live-${i}`, 'hold');
    await sleep(1000);
    const urls = Array.from({ length: 200 }, (_, i) => `${s.apiUrl}/api/runs/bench/default/bench/live-${i % 20}`);
    /** Every poller, spread over one 250 ms interval, polls every 250 ms until `seconds` have passed (once if 0). */
    const pollAll = (seconds: number, latencies: number[], serverMs?: (ms: number) => void) => {
      const start = performance.now();
      return Promise.all(
        urls.map(async (url, i) => {
          await sleep((i * 250) / urls.length);
          do {
            const t = performance.now();
            if ((await get(url, cookie, serverMs)) !== 200) throw new Error('live poll failed');
            latencies.push(performance.now() - t);
            if (seconds > 0) await sleep(250);
          } while (performance.now() - start < seconds * 1000);
        }),
      );
    };
    // Each poller first connects with one poll (a new connection, and for the first pollers of a run its first
    // query): reported apart, as the cold start. Then 6 s of steady polling, the figure the target is about.
    const firstPolls: number[] = [];
    await pollAll(0, firstPolls);
    await sleep(250);
    const queriesBefore = await metric(s.apiUrl, 'ptr_live_run_queries_total');
    const pollLatencies: number[] = [];
    const serverLatencies: number[] = [];
    const pollSeconds = 6;
    const pollCpuBefore = cpuNow();
    const benchLoop = monitorEventLoopDelay({ resolution: 5 });
    benchLoop.enable();
    await pollAll(pollSeconds, pollLatencies, (ms) => serverLatencies.push(ms));
    benchLoop.disable();
    const pollCpuAfter = cpuNow();
    const pollCpu = Object.fromEntries(Object.keys(pids).map((k) => [k, round((pollCpuAfter[k]! - pollCpuBefore[k]!) / pollSeconds, 2)]));
    log(`bench event loop delay during the polls: p99 ${round(benchLoop.percentile(99) / 1e6)} ms, max ${round(benchLoop.max / 1e6)} ms`);
    const queriesPerRunPerSecond = ((await metric(s.apiUrl, 'ptr_live_run_queries_total')) - queriesBefore) / 20 / pollSeconds;
    log('200 event streams on the same 20 live runs (10 each), for as long as the polls...');
    const liveRunPaths = Array.from({ length: 20 }, (_, i) => `/api/runs/bench/default/bench/live-${i}`);
    const streams = await benchLiveStreams({ apiUrl: s.apiUrl, headers: cookie, runs: liveRunPaths, perRun: 10, seconds: pollSeconds, queries: () => metric(s.apiUrl, 'ptr_live_run_queries_total'), log });
    s.fake.reset(); // the held provider calls fail, and their runs retry and finish: none is left open at the end
    s.fake.script(echo);
    await Promise.all(Array.from({ length: 20 }, (_, i) => workflowOf(`live-${i}`).result()));
    const polling = round(queriesPerRunPerSecond, 2);
    results.liveStreams = { ...streams.figures, pollingQueriesPerLiveRunPerSecond: polling, costsAtMostPolling: streams.figures.queriesPerLiveRunPerSecond <= polling, endedStreams: await streams.finish() };
    results.livePolls = { pollers: 200, liveRuns: 20, p99Ms: round(percentile(pollLatencies, 99)), p50Ms: round(percentile(pollLatencies, 50)), serverP99Ms: round(percentile(serverLatencies, 99)), firstPollP99Ms: round(percentile(firstPolls, 99)), coresBusy: pollCpu, queriesPerLiveRunPerSecond: round(queriesPerRunPerSecond, 2) };
  }

  if (memory) results.memoryMb = await memory.finish();

  if (wanted('servlets')) {
    log('servlet calls through the pool beside a direct Extism call...');
    const servlets = await benchServlets();
    results.servletCallMs = {
      pooledP50: round(servlets.pooled.p50, 3), pooledP99: round(servlets.pooled.p99, 3),
      directP50: round(servlets.direct.p50, 3), directP99: round(servlets.direct.p99, 3),
      overheadP50: round(servlets.pooled.p50 - servlets.direct.p50, 3),
    };
  }
  if (wanted('mcp')) {
    log('MCP tool calls: the activity body against the SDK directly, Temporal\'s round trip, then MCP runs against servlet runs...');
    // After the live part: every other request is answered at once by `echo`.
    results.mcp = await benchMcp({ stack: s, api, pids, otherwise: echo, log });
  }
  if (wanted('mcp-server')) {
    results.mcpServer = await benchMcpServer({ apiUrl: s.apiUrl, session, task: 'bench', providerCalls: () => s.fake.requests.length, pids, log });
  }
  if (wanted('long')) {
    log('a long run: 50 turns whose tool answers 100 KiB (history bytes and CPU per turn, first turns against last)...');
    // Last: no live run is held any more, so the other parts' requests are answered by `echo`.
    results.longRun = await benchLongRun({ stack: s, api, pids, otherwise: echo, log });
  }
  if (wanted('slow')) {
    log('a slow model: 1,000 runs at once against answers after 10 s, beside the same against the instant model; 1,000 held calls; then two workers...');
    // After the live part too: every other request is answered at once by `echo`.
    results.slowModel = await benchSlowModel({ stack: s, api, pids, otherwise: echo, log });
  }
  if (wanted('console')) {
    log('the console: a run page with about 2,000 entries in headless Chromium; followed runs against unfollowed ones...');
    results.console = await benchConsole({ stack: s, api, pids, otherwise: echo, log, session });
  }
  if (wanted('scale')) {
    log('scale: runs/s with 32, 256 and 1,000 runs in flight, each beside the bare workflow at the same load...');
    results.scale = await benchScale({ stack: s, api, pids, otherwise: echo, log }, { sizes: args.numbers('--scale-sizes'), runsPerRound: args.numbers('--scale-runs')?.[0] });
  }
  if (wanted('fairness')) {
    log('fairness: a user\'s runs one a second, idle and while another user floods the service (200 ms model)...');
    results.fairness = await benchFairness({ stack: s, api, pids, otherwise: echo, log }, { flood: args.numbers('--flood')?.[0] });
  }
  results.triggersRetriedAfter503 = retried503;
  // What the services exported: the spans of every run so far (warm-up and the parts measured), batched.
  if (traces) results.tracesExported = { exports: traces.exports, kib: round(traces.bytes / 1024), bytesPerRun: runs ? round(traces.bytes / runs) : null };

  // A partial run (some parts named) does not overwrite the full figures.
  const file = path.join(__dirname, chosen.length ? 'results.partial.json' : 'results.json');
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  printTable(results, path.relative(process.cwd(), file));
  await db.close();
}

async function metric(apiUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

function printTable(r: any, file: string) {
  const rows: Array<[string, string, string, string]> = [];
  if (r.serialLatencyMs) {
    rows.push(['trigger→ready p50 (serial)', `${r.serialLatencyMs.p50} ms`, `${r.serialLatencyMs.baselineP50} ms`, 'within 30 ms of baseline']);
    rows.push(['trigger→ready p99 (serial)', `${r.serialLatencyMs.p99} ms`, `${r.serialLatencyMs.baselineP99} ms`, '']);
  }
  if (r.throughput32) {
    const cpu = (c: Record<string, number>) => `${Object.values(c).reduce((a, b) => a + b, 0).toFixed(1)} ms`;
    rows.push(['completed runs/s, 32 in flight', `${r.throughput32.runsPerSecond}`, `${r.throughput32.baselinePerSecond}`, `≥ 75 %: ${r.throughput32.ratio >= 0.75 ? "met" : "not met"} (${Math.round(r.throughput32.ratio * 100)} %)`]);
    rows.push(['CPU per run, all processes', cpu(r.throughput32.cpuMsPerRun), cpu(r.throughput32.baselineCpuMsPerRun), '']);
  }
  if (r.closedRunReads) {
    rows.push(['GET closed run, req/s', `${r.closedRunReads.perSecond}`, `${r.closedRunReads.baselinePerSecond}`, `≥ 50 % (${Math.round(r.closedRunReads.ratio * 100)} %)`]);
    rows.push(['GET closed run, p99', `${r.closedRunReads.p99Ms} ms`, `${r.closedRunReads.baselineP99Ms} ms`, '']);
  }
  if (r.livePolls) {
    rows.push(['200 pollers / 20 live runs, p99', `${r.livePolls.p99Ms} ms`, '—', '≤ 50 ms']);
    rows.push(['  of which in the API (Server-Timing), p99', `${r.livePolls.serverP99Ms} ms`, '—', '']);
    rows.push(['  first poll of each poller (connects), p99', `${r.livePolls.firstPollP99Ms} ms`, '—', '']);
    rows.push(['Temporal queries per live run per s', `${r.livePolls.queriesPerLiveRunPerSecond}`, '—', '≤ 5']);
  }
  if (r.liveStreams) {
    const ls = r.liveStreams;
    rows.push([`queries per live run per s, ${ls.streams} streams`, `${ls.queriesPerLiveRunPerSecond}`, `${ls.pollingQueriesPerLiveRunPerSecond} (polls)`, `≤ polling: ${ls.costsAtMostPolling ? 'met' : 'not met'}`]);
    rows.push(['  first event of each stream, p99', `${ls.firstEventP99Ms} ms`, '—', '']);
    rows.push(['  streams that got `end` once the runs closed', `${ls.endedStreams} of ${ls.streams}`, '—', 'all']);
  }
  if (r.memoryMb) rows.push(...memoryRows(r.memoryMb));
  if (r.mcpServer) rows.push(...mcpServerRows(r.mcpServer));
  if (r.servletCallMs) {
    rows.push(['servlet call p50 (pool vs direct)', `${r.servletCallMs.pooledP50} ms`, `${r.servletCallMs.directP50} ms`, `overhead ≤ 1 ms (${r.servletCallMs.overheadP50} ms)`]);
    rows.push(['servlet call p99 (pool vs direct)', `${r.servletCallMs.pooledP99} ms`, `${r.servletCallMs.directP99} ms`, '']);
  }
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length), ['figure', 'ours', 'baseline', 'target'][i]!.length));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const where = { file: "Temporal dev server's database in a file (as npm run dev)", memory: "Temporal dev server's database in memory (--temporal-memory)", cluster: 'the cluster topology (--cluster: temporal-server and FerretDB on PostgreSQL)' }[r.temporal_store as string];
  console.log(`\nMachine: ${r.machine}; ${where}\n`);
  // Only the long or slow part chosen: each prints a table of its own.
  if (rows.length > 0) {
    console.log(line(['figure', 'ours', 'baseline', 'target']));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const row of rows) console.log(line(row));
  }
  if (r.throughput32) {
    const parts = (c: Record<string, number>) => Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ');
    console.log(`\nCPU ms per run at 32 in flight: ours: ${parts(r.throughput32.cpuMsPerRun)}; baseline: ${parts(r.throughput32.baselineCpuMsPerRun)}`);
    if (r.tracesExported) console.log(`tracing on: ${r.tracesExported.exports} exports, ${r.tracesExported.kib} KiB, ${r.tracesExported.bytesPerRun} bytes of spans per run`);
  }
  if (r.memoryMb) printMemory(r.memoryMb);
  if (r.mcp) printMcp(r.mcp);
  if (r.longRun) printLongRun(r.longRun);
  if (r.slowModel) printSlowModel(r.slowModel);
  if (r.console) printConsole(r.console);
  if (r.scale) printScale(r.scale);
  if (r.fairness) printFairness(r.fairness);
  console.log(`\nWritten to ${file}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
