/**
 * The `mcp-server` part: what calling a task as an MCP tool adds over triggering the same run with `PUT` and polling
 * it, and `tasks/get` under 200 MCP clients at once, each polling a live run it started as an MCP task. The 200
 * clients run in processes of their own (bench/mcp-server-clients.ts), apart from the bench's.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { cpuSeconds, inFlight, percentile, round } from './measure';
import type { FromClients, ToClients } from './mcp-server-clients';

export interface McpServerBenchDeps {
  apiUrl: string;
  /** The bench user's session id (its `Authorization: Bearer`). */
  session: string;
  /** The default profile's task `bench` (`Say {{ text }}`); a text with "hold" hangs at the fake provider. */
  task: string;
  /** How many provider calls the fake has received so far (the held ones among them: the clients' live runs). */
  providerCalls: () => number;
  /** The stack's processes by name (api, worker, ferretdb, temporal): the cores each keeps busy while clients poll. */
  pids: Record<string, number>;
  log: (msg: string) => void;
}

export interface McpServerFigures {
  /** Serial, from the request to the answer with the run's end: MCP `tools/call` vs `PUT` then polling. */
  callMs: { p50: number; p99: number; putP50: number; putP99: number; addedP50: number };
  /**
   * 200 clients polling `tasks/get` of their own live task, each client's first poll apart: at the task's
   * `pollInterval` (how the SDK's clients poll), then ten times as often. From the request to the answer in the
   * client, the API's own share (`Server-Timing`), both sides' event-loop delay, and the cores each process kept busy.
   */
  taskPolls: Array<{
    clients: number;
    everyMs: number;
    polls: number;
    p50Ms: number;
    p99Ms: number;
    serverP50Ms: number;
    serverP99Ms: number;
    clientLoopDelayP99Ms: number;
    /** The API's event-loop delay over the polling (from its /metrics), p99 and max. */
    apiLoopDelayMs: { p99: number; max: number };
    coresBusy: Record<string, number>;
    /** Each client's first poll (its new connection, the API's first read of the task): apart, as the cold start. */
    firstPollP99Ms?: number;
  }>;
}

const SERIAL = 50;
const CLIENTS = 200;
/** The clients' processes: each holds CLIENTS / CLIENT_PROCESSES SDK clients. */
const CLIENT_PROCESSES = 4;
const POLL_SECONDS = 10;
/** At most this long for the clients' runs to reach the provider before the polling starts anyway. */
const SETTLE_MAX_MS = 60_000;
/** How often each client polls: the `pollInterval` a task gives (what the SDK's clients follow), then ten times as often. */
const POLL_EVERY_MS = [1_000, 100];

/** A process of MCP clients, and the one way to talk to it: a message, and the answer of the kind it waits for. */
function clientsProcess() {
  const child: ChildProcess = fork(path.join(__dirname, 'mcp-server-clients.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return {
    ask<K extends FromClients['kind']>(message: ToClients, answer: K): Promise<Extract<FromClients, { kind: K }>> {
      return new Promise((resolve, reject) => {
        const onMessage = (m: FromClients) => {
          if (m.kind !== answer && m.kind !== 'failed') return;
          child.off('message', onMessage);
          child.off('exit', onExit);
          if (m.kind === 'failed') reject(new Error(`an MCP clients process failed: ${m.error}`));
          else resolve(m as Extract<FromClients, { kind: K }>);
        };
        const onExit = (code: number | null) => reject(new Error(`an MCP clients process exited (${code}) before it answered "${answer}"`));
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send(message);
      });
    },
    kill: () => child.kill(),
  };
}

/** The API's event-loop delay since its last scrape (prom-client resets it at each), p99 and max, in ms. */
async function apiLoopDelay(apiUrl: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: round(read('nodejs_eventloop_lag_p99_seconds')), max: round(read('nodejs_eventloop_lag_max_seconds')) };
}

/** CPU seconds each process has used so far. */
const cpuOf = (pids: Record<string, number>) => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));

export async function benchMcpServer(deps: McpServerBenchDeps): Promise<McpServerFigures> {
  const { apiUrl, session, task, log } = deps;
  const headers = { Authorization: `Bearer ${session}`, 'content-type': 'application/json' };
  log(`mcp-server: ${SERIAL} serial tool calls, and as many PUT triggers polled to the end...`);
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${apiUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${session}` } } }));
  const stamp = Date.now();
  const calls = await inFlight(SERIAL, 1, async (i) => {
    await client.callTool({ name: task, arguments: { text: 'x' }, _meta: { 'io.github.prompt-task-runner/run': `mcp-${stamp}-${i}` } }, CallToolResultSchema);
  });
  const puts = await inFlight(SERIAL, 1, async (i) => {
    const path = `/api/profiles/~/default/tasks/${task}/runs/put-${stamp}-${i}`;
    const res = await fetch(`${apiUrl}${path}`, { method: 'PUT', headers, body: JSON.stringify({ parameters: { text: 'x' } }) });
    if (res.status !== 201) throw new Error(`PUT answered ${res.status}: ${await res.text()}`);
    // As a client polls: at once, then every 50 ms.
    for (;;) {
      const run = (await (await fetch(`${apiUrl}${path}`, { headers })).json()) as { status: string };
      if (run.status === 'ready' || run.status === 'error') return;
      await sleep(50);
    }
  });
  await client.close();

  const taskPolls: McpServerFigures['taskPolls'] = [];
  const processes = Array.from({ length: CLIENT_PROCESSES }, () => clientsProcess());
  try {
    const per = CLIENTS / CLIENT_PROCESSES;
    log(`mcp-server: ${CLIENTS} clients in ${CLIENT_PROCESSES} processes, each calling the task as an MCP task...`);
    const callsBefore = deps.providerCalls();
    await Promise.all(processes.map((p, i) => p.ask({ kind: 'start', apiUrl, session, task, clients: per, first: i * per }, 'ready')));
    // Polled once every run is live at the provider: the figures are of polling, not of 200 runs starting beside it.
    const settled = performance.now();
    while (deps.providerCalls() - callsBefore < CLIENTS && performance.now() - settled < SETTLE_MAX_MS) await sleep(100);
    log(`mcp-server: ${deps.providerCalls() - callsBefore} of ${CLIENTS} runs held at the provider after ${round((performance.now() - settled) / 1000)} s more`);
    for (const [n, everyMs] of POLL_EVERY_MS.entries()) {
      log(`mcp-server: each client polls its own live task every ${everyMs} ms for ${POLL_SECONDS} s...`);
      await apiLoopDelay(apiUrl);
      const cpuBefore = cpuOf(deps.pids);
      const polled = await Promise.all(processes.map((p) => p.ask({ kind: 'poll', seconds: POLL_SECONDS, everyMs, cold: n === 0 }, 'polled')));
      const cpuAfter = cpuOf(deps.pids);
      const apiLoop = await apiLoopDelay(apiUrl);
      const latencies = polled.flatMap((r) => r.latencies);
      const server = polled.flatMap((r) => r.serverMs);
      log(`mcp-server: tasks/get every ${everyMs} ms: p90 ${round(percentile(latencies, 90))} ms, p95 ${round(percentile(latencies, 95))} ms, max ${round(Math.max(...latencies))} ms`);
      const coresBusy = Object.fromEntries(Object.keys(cpuAfter).map((k) => [k, round((cpuAfter[k]! - cpuBefore[k]!) / POLL_SECONDS, 2)]));
      coresBusy.clients = round(polled.reduce((sum, r) => sum + r.cpuSeconds, 0) / POLL_SECONDS, 2);
      const first = polled.flatMap((r) => r.first);
      taskPolls.push({
        clients: CLIENTS,
        everyMs,
        polls: latencies.length,
        p50Ms: round(percentile(latencies, 50)),
        p99Ms: round(percentile(latencies, 99)),
        serverP50Ms: round(percentile(server, 50), 2),
        serverP99Ms: round(percentile(server, 99), 2),
        clientLoopDelayP99Ms: round(Math.max(...polled.map((r) => r.loopDelayP99Ms))),
        apiLoopDelayMs: apiLoop,
        coresBusy,
        ...(first.length ? { firstPollP99Ms: round(percentile(first, 99)) } : {}),
      });
    }
    await Promise.all(processes.map((p) => p.ask({ kind: 'finish' }, 'finished')));
  } finally {
    for (const p of processes) p.kill();
  }

  const [p50, p99, putP50, putP99] = [percentile(calls.latencies, 50), percentile(calls.latencies, 99), percentile(puts.latencies, 50), percentile(puts.latencies, 99)];
  return {
    callMs: { p50: round(p50), p99: round(p99), putP50: round(putP50), putP99: round(putP99), addedP50: round(p50 - putP50) },
    taskPolls,
  };
}

/** The part's rows of the bench's table. */
export function mcpServerRows(r: McpServerFigures): Array<[string, string, string, string]> {
  return [
    ['MCP tools/call → end p50 (serial)', `${r.callMs.p50} ms`, `${r.callMs.putP50} ms (PUT + polls)`, `added: ${r.callMs.addedP50} ms`],
    ['MCP tools/call → end p99 (serial)', `${r.callMs.p99} ms`, `${r.callMs.putP99} ms (PUT + polls)`, ''],
    ...r.taskPolls.flatMap((t): Array<[string, string, string, string]> => [
      [`tasks/get, ${t.clients} clients polling every ${t.everyMs} ms, p99`, `${t.p99Ms} ms`, '—', '≤ 50 ms'],
      [`  p50 (${t.polls} polls)`, `${t.p50Ms} ms`, '—', ''],
      ['  of which in the API (Server-Timing), p50 / p99', `${t.serverP50Ms} / ${t.serverP99Ms} ms`, '—', ''],
      ['  event-loop delay p99: clients (worst process) / API (max)', `${t.clientLoopDelayP99Ms} / ${t.apiLoopDelayMs.p99} (${t.apiLoopDelayMs.max}) ms`, '—', ''],
      ...(t.firstPollP99Ms === undefined ? [] : [['  first poll of each client (cold start), p99', `${t.firstPollP99Ms} ms`, '—', ''] as [string, string, string, string]]),
      ['  cores busy while polling', Object.entries(t.coresBusy).map(([k, v]) => `${k} ${v}`).join(', '), '—', ''],
    ]),
  ];
}
