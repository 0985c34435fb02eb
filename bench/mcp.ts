/**
 * The `mcp` part: what a run's call of a remote MCP tool costs, beside the same call made directly and beside a
 * servlet call, against the real `@modelcontextprotocol/server-everything` (its `echo`), which the part starts on
 * loopback and stops.
 *
 * 1. The activity body: `callMcpTool`'s work as the worker does it (`createMcpToolCaller` over
 *    `createMcpSessionPool`, the install read from the store and opened by `mcpInstallForCall`, reused for 2 s by
 *    `cachedInstallLoader` as in the worker)
 *    against the SDK's `Client` calling the same `echo` over one connected session, both warm, in alternating rounds;
 *    and the pool alone (`callTool` on the install's session, no store read), which splits what the body adds into
 *    the store read and the pool's own (network guard, capped transport, result checks).
 * 2. Temporal's part, apart: serial runs with no tool call, one MCP call and one servlet call, interleaved; their
 *    trigger→ready, and the tool activity's schedule-to-close read from each run's history (ActivityTaskScheduled to
 *    ActivityTaskCompleted, server clock).
 * 3. Throughput: MCP runs against servlet runs (each one call, then the final answer), at the same concurrency, in
 *    rounds mcp, servlet, servlet, mcp, each after the stack settled; with the CPU each process spent per run (the MCP
 *    server's too: here it shares the machine, where a remote server would not).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { temporal } from '@temporalio/proto';
import { cachedInstallLoader, createMcpToolCaller, type McpCallContext, type McpToolCallInput } from '../activities/mcp-call';
import { loadConfig } from '../src/config';
import type { CallToolResult } from '../src/contract/types';
import { mcpClientOptions } from '../src/mcp/options';
import { createMcpSessionPool } from '../src/mcp/pool';
import { connectDb } from '../src/store/connect';
import { mcpInstallForCall } from '../src/store/mcp-installs';
import { keyringFromConfig } from '../src/store/secrets';
import { runWorkflowId } from '../src/temporal/ids';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../test/helpers/fake-provider';
import { freePort, waitForPort } from '../test/helpers/net';
import { buildTestServlets } from '../test/helpers/servlets';
import type { runTask } from '../workflows/run-task';
import { cpuSeconds, inFlight, percentile, round } from './measure';
import type { PartDeps } from './stack';

/** The stack's API and worker may reach loopback MCP servers (and over http://): bench/run.ts passes this to the stack. */
export const MCP_BENCH_ENV = { MCP_ALLOWLIST: '127.0.0.1' };

const EVERYTHING = path.join(__dirname, '../node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const OWNER = 'bench';
/** Profiles of their own (tools are per profile): each offers its one tool, so both kinds of run send alike requests. */
const MCP = { profile: 'mcp', task: 'mcp', install: 'ev', tool: 'echo', mark: 'MCP bench:' } as const;
const SERVLET = { profile: 'servlet', task: 'servlet', install: 'gr', tool: 'greet', mark: 'Servlet bench:' } as const;
const NONE = { profile: 'default', task: 'bench' } as const;

const BODY_WARMUP = 200;
const BODY_ROUNDS = 10;
const BODY_CALLS_PER_ROUND = 200;
/** Serial runs of each kind (no tool, MCP, servlet), interleaved. */
const SERIAL = 40;
const THROUGHPUT_RUNS = 500;
const CONCURRENCY = 32;
const ORDER = ['mcp', 'servlet', 'servlet', 'mcp'] as const;

export interface Percentiles {
  p50: number;
  p99: number;
}
export interface McpFigures {
  server: string;
  activityBodyMs: { pooled: Percentiles; poolAlone: Percentiles; direct: Percentiles; addedP50: number; addedP99: number; calls: number };
  temporalRoundTripMs: {
    runs: number;
    triggerToReady: { noTool: Percentiles; mcp: Percentiles; servlet: Percentiles };
    toolActivityScheduleToClose: { mcp: Percentiles; servlet: Percentiles };
  };
  throughput: {
    concurrency: number;
    runs: number;
    mcp: { runsPerSecond: number; triggerToReadyMs: Percentiles; cpuMsPerRun: Record<string, number> };
    servlet: { runsPerSecond: number; triggerToReadyMs: Percentiles; cpuMsPerRun: Record<string, number> };
    ratio: number;
    rounds: Array<{ side: string; runs: number; perSecond: number }>;
  };
}

/** Runs `work` as the named step: a failure says which step failed. */
async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw new Error(`mcp part: the step "${name}" failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

export async function benchMcp({ stack, api, pids, otherwise, log }: PartDeps): Promise<McpFigures> {
  if (stack.env.MCP_ALLOWLIST !== MCP_BENCH_ENV.MCP_ALLOWLIST) throw new Error('mcp part: the stack was started without MCP_ALLOWLIST=127.0.0.1 (bench/run.ts passes MCP_BENCH_ENV)');
  log('  starting server-everything on loopback...');
  const everything = await step('starting server-everything', () => startEverything());
  const failures: string[] = [];
  try {
    log(`  installing it (${everything.url}) and the greeter servlet through the API...`);
    const signed = await step('installing the MCP server and the servlet, creating the tasks', () => setUp(api, everything.url));

    log(`  the activity body against the SDK client calling echo directly (${BODY_ROUNDS} rounds of ${BODY_CALLS_PER_ROUND} each, alternating)...`);
    const activityBodyMs = await step('timing the activity body against the direct SDK call', () => activityBody(stack.env, everything.url));

    // Every request of this part's runs: the first asks for the tool, the second checks what it answered and ends the run.
    stack.fake.script((req) => answer(req, failures) ?? otherwise(req));
    const runner = runs(stack, api, signed);

    log(`  serial runs: ${SERIAL} each with no tool call, one MCP call, one servlet call, interleaved...`);
    const temporalRoundTripMs = await step('serial runs (the Temporal round trip)', async () => {
      const latencies = { noTool: [] as number[], mcp: [] as number[], servlet: [] as number[] };
      for (let i = 0; i < 3; i++) await runner.one('mcp', `mcp-warm-${i}`).then(() => runner.one('servlet', `servlet-warm-${i}`));
      for (let i = 0; i < SERIAL; i++) {
        for (const kind of ['noTool', 'mcp', 'servlet'] as const) {
          const t = performance.now();
          await runner.one(kind, `serial-${kind}-${i}`);
          latencies[kind].push(performance.now() - t);
        }
      }
      const activity = async (kind: 'mcp' | 'servlet') => {
        const times: number[] = [];
        for (let i = 0; i < SERIAL; i++) times.push(await toolActivityMs(stack.client, kind, `serial-${kind}-${i}`));
        return percentiles(times);
      };
      return {
        runs: SERIAL,
        triggerToReady: { noTool: percentiles(latencies.noTool), mcp: percentiles(latencies.mcp), servlet: percentiles(latencies.servlet) },
        toolActivityScheduleToClose: { mcp: await activity('mcp'), servlet: await activity('servlet') },
      };
    });
    if (failures.length) throw new Error(`mcp part: ${failures.length} tool calls answered otherwise than expected, the first: ${failures[0]}`);

    const perRound = THROUGHPUT_RUNS / (ORDER.length / 2);
    log(`  throughput: ${THROUGHPUT_RUNS} MCP runs and ${THROUGHPUT_RUNS} servlet runs, ${CONCURRENCY} in flight (rounds of ${perRound}: ${ORDER.join(', ')})...`);
    const throughput = await step('throughput (MCP runs against servlet runs)', async () => {
      const sides = { mcp: { seconds: 0, latencies: [] as number[], cpu: {} as Record<string, number> }, servlet: { seconds: 0, latencies: [] as number[], cpu: {} as Record<string, number> } };
      const rounds: McpFigures['throughput']['rounds'] = [];
      const processes = { ...pids, 'mcp-server': everything.pid };
      const cpuNow = () => Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, cpuSeconds(pid)]));
      for (const [r, side] of ORDER.entries()) {
        const settled = await settle(processes);
        const before = cpuNow();
        const result = await inFlight(perRound, CONCURRENCY, (i) => runner.one(side, `tput-${side}-${r}-${i}`));
        const after = cpuNow();
        for (const k of Object.keys(processes)) sides[side].cpu[k] = (sides[side].cpu[k] ?? 0) + (after[k]! - before[k]!) * 1000;
        sides[side].seconds += result.seconds;
        sides[side].latencies.push(...result.latencies);
        rounds.push({ side, runs: perRound, perSecond: round(result.perSecond) });
        log(`    ${side}: ${perRound} in ${round(result.seconds)} s, ${round(result.perSecond)}/s (after the stack settled in ${settled} s)`);
      }
      const figures = (side: keyof typeof sides) => ({
        runsPerSecond: round(THROUGHPUT_RUNS / sides[side].seconds),
        triggerToReadyMs: percentiles(sides[side].latencies),
        cpuMsPerRun: Object.fromEntries(Object.entries(sides[side].cpu).map(([k, ms]) => [k, round(ms / THROUGHPUT_RUNS, 2)])),
      });
      const mcp = figures('mcp');
      const servlet = figures('servlet');
      return { concurrency: CONCURRENCY, runs: THROUGHPUT_RUNS, mcp, servlet, ratio: round(mcp.runsPerSecond / servlet.runsPerSecond, 2), rounds };
    });
    if (failures.length) throw new Error(`mcp part: ${failures.length} tool calls answered otherwise than expected, the first: ${failures[0]}`);
    return { server: `@modelcontextprotocol/server-everything ${everything.version} (streamableHttp, loopback)`, activityBodyMs, temporalRoundTripMs, throughput };
  } finally {
    stack.fake.script(otherwise);
    await step('stopping server-everything', () => everything.stop());
  }
}

/**
 * server-everything in `streamableHttp` mode on a free port, bound to 127.0.0.1 (bench/loopback-only.mjs: the server
 * itself listens on every interface), logging to /tmp/ptr-bench-mcp-everything.log. Checks from /proc that it listens
 * on loopback only.
 */
async function startEverything(): Promise<{ url: string; version: string; pid: number; stop(): Promise<void> }> {
  if (!fs.existsSync(EVERYTHING)) throw new Error(`${EVERYTHING} is missing (npm install)`);
  const version = (JSON.parse(fs.readFileSync(path.join(path.dirname(EVERYTHING), '../package.json'), 'utf8')) as { version: string }).version;
  const port = await freePort();
  const logFile = path.join(os.tmpdir(), 'ptr-bench-mcp-everything.log');
  const out = fs.openSync(logFile, 'w');
  const child: ChildProcess = spawn(process.execPath, ['--import', path.join(__dirname, 'loopback-only.mjs'), EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const killNow = () => child.kill('SIGKILL');
  process.once('exit', killNow);
  const exited = new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
  const stop = async () => {
    process.removeListener('exit', killNow);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]))) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    await Promise.race([waitForPort(port, 20_000), exited.then(() => Promise.reject(new Error(`it exited at start (${logFile})`)))]);
    const where = listeningAddresses(port);
    if (where.length === 0 || where.some((a) => a !== '127.0.0.1')) throw new Error(`it listens on ${where.join(', ') || 'nothing'}, not on 127.0.0.1 only`);
  } catch (err) {
    await stop();
    throw err;
  }
  process.stderr.write(`[bench] server-everything ${version} on 127.0.0.1:${port}, logs to ${logFile}\n`);
  return { url: `http://127.0.0.1:${port}/mcp`, version, pid: child.pid!, stop };
}

/** The local addresses listening on `port` (TCP, IPv4 and IPv6), from /proc/net. */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue;
      const [hex, portHex] = local.split(':');
      if (parseInt(portHex!, 16) !== port) continue;
      // IPv4 as four little-endian bytes; anything else (IPv6) is named as it is, and fails the loopback check.
      found.push(hex!.length === 8 ? hex!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join('.') : `[${hex}]`);
    }
  }
  return found;
}

/** Throws with the answer's text unless its status is 200 or 201. */
async function expectStatus(pending: Promise<Response>, what: string): Promise<Response> {
  const res = await pending;
  if (res.status !== 200 && res.status !== 201) throw new Error(`${what} answered ${res.status}: ${await res.text()}`);
  return res;
}

/** The profiles, installs and tasks, through the API as a user makes them: the signed trigger URL of each kind of run. */
async function setUp(api: PartDeps['api'], mcpUrl: string): Promise<Record<'mcp' | 'servlet' | 'noTool', string>> {
  const json = (body: unknown, method = 'POST'): RequestInit => ({ method, body: JSON.stringify(body) });
  const { greeter } = await buildTestServlets();
  await expectStatus(api('/api/servlets/~/greeter', { method: 'PUT', headers: { 'content-type': 'application/wasm' }, body: greeter }), 'publishing the greeter servlet');
  for (const kind of [MCP, SERVLET]) await expectStatus(api(`/api/profiles/~/${kind.profile}`, json({ description: '', is_public: false })), `creating the profile ${kind.profile}`);
  // The install lists the server's tools through the API's network guard (MCP_ALLOWLIST); only echo is offered.
  await expectStatus(api(`/api/profiles/~/${MCP.profile}/installations`, json({ name: MCP.install, mcp: { url: mcpUrl }, settings: { tools: [MCP.tool] } })), 'installing server-everything');
  await expectStatus(api(`/api/profiles/~/${SERVLET.profile}/installations`, json({ servlet_slug: `${OWNER}/greeter`, name: SERVLET.install })), 'installing the greeter servlet');
  const signed: Record<string, string> = {};
  for (const kind of [MCP, SERVLET]) {
    const task = { runner: 'openai', openai: { prompt: `${kind.mark} {{ text }}`, model: 'bench' }, settings: { key: 'sk-bench-task-key' } };
    await expectStatus(api(`/api/tasks/~/${kind.profile}/${kind.task}`, json(task, 'PUT')), `creating the task ${kind.profile}/${kind.task}`);
  }
  for (const [kind, where] of [['mcp', MCP], ['servlet', SERVLET], ['noTool', NONE]] as const) {
    const res = await expectStatus(api(`/api/tasks/~/${where.profile}/${where.task}/signed`, { method: 'POST' }), `signing the task ${where.profile}/${where.task}`);
    signed[kind] = ((await res.json()) as { url: string }).url;
  }
  return signed as Record<'mcp' | 'servlet' | 'noTool', string>;
}

/**
 * The fake model for this part's runs (null for any other request): the first request of a run asks for its tool with
 * the run's name; the second, with the tool's answer, ends the run, and an answer that is not the expected one is
 * kept in `failures`.
 */
function answer(req: RecordedRequest, failures: string[]) {
  const text = lastUserText(req);
  const kind = text.startsWith(MCP.mark) ? MCP : text.startsWith(SERVLET.mark) ? SERVLET : undefined;
  if (!kind) return null;
  const run = text.slice(kind.mark.length).trim();
  const toolMessage = ((req.body?.messages ?? []) as Array<{ role: string; content: unknown }>).find((m) => m.role === 'tool');
  if (!toolMessage) {
    const args = kind === MCP ? { message: run } : { name: run };
    return openaiToolCall([{ id: 'call_1', name: `${kind.install}__${kind.tool}`, arguments: args }]);
  }
  const expected = kind === MCP ? `Echo: ${run}` : `Hello, ${run}!`;
  const got = typeof toolMessage.content === 'string' ? toolMessage.content : JSON.stringify(toolMessage.content);
  if (!got.includes(expected)) failures.push(`${run}: ${got.slice(0, 300)}`);
  return openaiText('done');
}

/** Triggers runs of each kind and waits for their end: throws with the run's last entry unless it is `ready`. */
function runs(stack: PartDeps['stack'], api: PartDeps['api'], signed: Record<'mcp' | 'servlet' | 'noTool', string>) {
  const where = { mcp: MCP, servlet: SERVLET, noTool: NONE };
  return {
    async one(kind: 'mcp' | 'servlet' | 'noTool', run: string): Promise<void> {
      let res: Response;
      // Like a client: a 503 (the database busy) is tried again; triggers are idempotent by name.
      for (let attempt = 1; ; attempt++) {
        res = await fetch(signed[kind], { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': run }, body: JSON.stringify({ text: run }) });
        if (res.status !== 503 || attempt === 5) break;
        await res.arrayBuffer();
        await sleep(100 * attempt);
      }
      if (res.status !== 201 && res.status !== 200) throw new Error(`triggering ${run} answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
      const { profile, task } = where[kind];
      const outcome = await stack.client.workflow.getHandle<typeof runTask>(runWorkflowId({ owner: OWNER, profile, task, run })).result();
      if (outcome.status === 'ready') return;
      const record = (await (await api(`/api/runs/${OWNER}/${profile}/${task}/${run}`)).json()) as { results?: unknown[] };
      throw new Error(`the run ${run} ended ${outcome.status}: ${JSON.stringify(record.results?.at(-1)).slice(0, 500)}`);
    },
  };
}

/** The tool activity's schedule-to-close in a run's history (server clock, ms): its ActivityTaskScheduled to ActivityTaskCompleted. */
async function toolActivityMs(client: PartDeps['stack']['client'], kind: 'mcp' | 'servlet', run: string): Promise<number> {
  const { profile, task } = kind === 'mcp' ? MCP : SERVLET;
  const activity = kind === 'mcp' ? 'callMcpTool' : 'callTool';
  const events = (await client.workflow.getHandle(runWorkflowId({ owner: OWNER, profile, task, run })).fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activity);
  if (!scheduled) throw new Error(`the run ${run} has no ${activity} activity in its history`);
  const completed = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '') === String(scheduled.eventId));
  if (!completed) throw new Error(`the ${activity} activity of the run ${run} did not complete`);
  return eventMs(completed) - eventMs(scheduled);
}

const eventMs = (e: temporal.api.history.v1.IHistoryEvent) => Number(String(e.eventTime?.seconds ?? 0)) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/**
 * The activity body (activities/mcp-call.ts, as the worker builds it in src/temporal/worker.ts) against the SDK's
 * Client over one connected session, calling the same server's echo: both warm, alternating rounds.
 */
async function activityBody(env: Record<string, string>, url: string): Promise<McpFigures['activityBodyMs']> {
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
  const keyring = keyringFromConfig(config);
  const db = await connectDb(config.MONGO_URL);
  const pool = createMcpSessionPool(mcpClientOptions(config));
  const call = createMcpToolCaller({ calls: pool, loadInstall: cachedInstallLoader((owner, profile, name) => mcpInstallForCall(db.models, keyring, { owner, profile, name })) });
  const client = new Client({ name: 'ptr-bench', version: '0.0.0' });
  const controller = new AbortController();
  // What the activity gives the body: its signal, a heartbeat (here nothing), and `sending` (a heartbeat there).
  const context: McpCallContext = { mayHaveRun: false, signal: controller.signal, heartbeat: () => undefined, sending: () => undefined };
  // As the workflow asks: echo says `idempotentHint: true`.
  const input: McpToolCallInput = { owner: OWNER, profile: MCP.profile, install: MCP.install, tool: MCP.tool, arguments: { message: 'hi' }, idempotent: true };
  const check = (result: CallToolResult | Awaited<ReturnType<Client['callTool']>>, how: string) => {
    const content = result.content as Array<{ type: string; text?: string }>;
    if (result.isError || content[0]?.text !== 'Echo: hi') throw new Error(`the ${how} call answered ${JSON.stringify(result).slice(0, 300)}`);
  };
  const pooledCall = async () => check((await call(input, context)).result, 'pooled');
  const directCall = async () => check(await client.callTool({ name: MCP.tool, arguments: { message: 'hi' } }), 'direct');
  // The pool alone: the same session (the same key), the install opened once, outside the timing.
  const opened = await mcpInstallForCall(db.models, keyring, { owner: OWNER, profile: MCP.profile, name: MCP.install });
  if (!opened) throw new Error('the MCP install is not in the store');
  const target = { key: `${OWNER}/${MCP.profile}/${MCP.install}`, url: opened.url, headers: opened.headers };
  const poolCall = async () => check(await pool.callTool(target, { name: MCP.tool, arguments: { message: 'hi' } }, { signal: controller.signal }), 'pool');
  const pooled: number[] = [];
  const poolAlone: number[] = [];
  const direct: number[] = [];
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await time(pooledCall, BODY_WARMUP, []);
    await time(poolCall, BODY_WARMUP, []);
    await time(directCall, BODY_WARMUP, []);
    for (let r = 0; r < BODY_ROUNDS; r++) {
      await time(pooledCall, BODY_CALLS_PER_ROUND, pooled);
      await time(poolCall, BODY_CALLS_PER_ROUND, poolAlone);
      await time(directCall, BODY_CALLS_PER_ROUND, direct);
    }
  } finally {
    controller.abort();
    await client.close().catch(() => undefined);
    await pool.close();
    await db.close();
  }
  const p = percentiles(pooled);
  const d = percentiles(direct);
  return { pooled: p, poolAlone: percentiles(poolAlone), direct: d, addedP50: round(p.p50 - d.p50, 3), addedP99: round(p.p99 - d.p99, 3), calls: pooled.length };
}

async function time(fn: () => Promise<void>, times: number, into: number[]): Promise<void> {
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn();
    into.push(performance.now() - start);
  }
}

function percentiles(samples: number[]): Percentiles {
  return { p50: round(percentile(samples, 50), 3), p99: round(percentile(samples, 99), 3) };
}

/** Waits until the stack is idle (under a tenth of a core over half a second), at most 30 s: how long it took (s). */
async function settle(pids: Record<string, number>): Promise<number> {
  const began = performance.now();
  const cpu = () => Object.values(pids).reduce((n, pid) => n + cpuSeconds(pid), 0);
  for (;;) {
    const before = cpu();
    await sleep(500);
    if ((cpu() - before) / 0.5 < 0.1 || performance.now() - began > 30_000) return round((performance.now() - began) / 1000);
  }
}

/** The part's table, for bench/run.ts's output. */
export function printMcp(r: McpFigures) {
  const b = r.activityBodyMs;
  const t = r.temporalRoundTripMs;
  const tp = r.throughput;
  const pp = (p: Percentiles, unit = ' ms') => `${p.p50}${unit} / ${p.p99}${unit}`;
  const rows: string[][] = [
    ['activity body: pooled session, install from the store', pp(b.pooled), `added p50 ${b.addedP50} ms (≤ 5 ms: ${b.addedP50 <= 5 ? 'met' : 'not met'}), p99 ${b.addedP99} ms`],
    ['  the pool alone (no store read)', pp(b.poolAlone), `the store read and opening: ${round(b.pooled.p50 - b.poolAlone.p50, 3)} ms p50`],
    ['  the SDK Client directly, one session', pp(b.direct), `${b.calls} calls each`],
    [`serial trigger→ready, one MCP call (${t.runs} runs)`, pp(t.triggerToReady.mcp), `+${round(t.triggerToReady.mcp.p50 - t.triggerToReady.noTool.p50)} ms p50 over no tool call`],
    ['  one servlet call', pp(t.triggerToReady.servlet), `+${round(t.triggerToReady.servlet.p50 - t.triggerToReady.noTool.p50)} ms p50 over no tool call`],
    ['  no tool call', pp(t.triggerToReady.noTool), ''],
    ['tool activity schedule-to-close (history): MCP', pp(t.toolActivityScheduleToClose.mcp), ''],
    ['  servlet', pp(t.toolActivityScheduleToClose.servlet), ''],
    [`runs/s, ${tp.concurrency} in flight: MCP / servlet (${tp.runs} each)`, `${tp.mcp.runsPerSecond} / ${tp.servlet.runsPerSecond}`, `${Math.round(tp.ratio * 100)} %`],
    ['  trigger→ready, MCP runs', pp(tp.mcp.triggerToReadyMs), ''],
    ['  trigger→ready, servlet runs', pp(tp.servlet.triggerToReadyMs), ''],
  ];
  const header = ['MCP (p50 / p99)', 'figure', 'compared'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(`\nMCP tool calls against ${r.server}\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  console.log(`  throughput rounds: ${tp.rounds.map((x) => `${x.side} ${x.perSecond}/s`).join(', ')}`);
  const cpu = (c: Record<string, number>) => `${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')} (all ${round(Object.values(c).reduce((a, v) => a + v, 0), 1)})`;
  console.log(`  CPU ms per run: MCP runs: ${cpu(tp.mcp.cpuMsPerRun)}; servlet runs: ${cpu(tp.servlet.cpuMsPerRun)}`);
}
