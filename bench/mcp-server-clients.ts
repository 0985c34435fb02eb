/**
 * One process of the `mcp-server` part's MCP clients (bench/mcp-server.ts forks several, so the clients' own work
 * shares no event loop with the bench's or each other's). Each client is the SDK's, as a user would point it at the
 * service: it connects (with its `GET` stream), calls the task as an MCP task, and on each `poll` polls `tasks/get` of
 * its own task, timing each from the request to the answer, and noting the API's own share (`Server-Timing`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import pLimit from 'p-limit';

/** What the parent sends, in order: `start` (connect and call), then `poll`, then `finish` (cancel and close). */
export type ToClients =
  | { kind: 'start'; apiUrl: string; session: string; task: string; clients: number; first: number }
  /** `cold`: time each client's first poll apart first. */
  | { kind: 'poll'; seconds: number; everyMs: number; cold: boolean }
  | { kind: 'finish' };

/** What a clients process answers: `ready` after `start`, `polled` after `poll`, `finished` after `finish`. */
export type FromClients =
  | { kind: 'ready' }
  | { kind: 'polled'; first: number[]; latencies: number[]; serverMs: number[]; loopDelayP99Ms: number; cpuSeconds: number }
  | { kind: 'finished' }
  | { kind: 'failed'; error: string };

const send = (message: FromClients) => process.send!(message);

let clients: Client[] = [];
let taskIds: string[] = [];
const serverMs: number[] = [];

/** fetch, noting the `Server-Timing` of each `tasks/get` answer. */
const timedFetch = async (input: string | URL | Request, init?: RequestInit) => {
  const res = await fetch(input, init);
  if (typeof init?.body === 'string' && init.body.includes('"tasks/get"')) {
    const dur = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1];
    if (dur) serverMs.push(Number(dur));
  }
  return res;
};

async function start(m: Extract<ToClients, { kind: 'start' }>) {
  const connect = async () => {
    const client = new Client({ name: 'bench', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${m.apiUrl}/mcp`), { fetch: timedFetch, requestInit: { headers: { Authorization: `Bearer ${m.session}` } } });
    await client.connect(transport);
    return client;
  };
  const limit = pLimit(16);
  clients = await Promise.all(Array.from({ length: m.clients }, () => limit(connect)));
  const tasks = await Promise.all(
    clients.map((c, i) => limit(() => c.request({ method: 'tools/call', params: { name: m.task, arguments: { text: `hold ${m.first + i}` }, task: {} } }, CreateTaskResultSchema))),
  );
  taskIds = tasks.map((t) => t.task.taskId);
}

/**
 * Each client's first poll of its task (a new connection for the request, a first read of the task in the API),
 * timed apart as the cold start; then `seconds` of polling every `everyMs`, the figure the target is about.
 */
async function poll(m: Extract<ToClients, { kind: 'poll' }>) {
  const first: number[] = [];
  await Promise.all(
    clients.map(async (c, i) => {
      if (!m.cold) return;
      await sleep((i * m.everyMs) / clients.length);
      const t = performance.now();
      await c.experimental.tasks.getTask(taskIds[i]!);
      first.push(performance.now() - t);
    }),
  );
  if (m.cold) await sleep(m.everyMs);
  const latencies: number[] = [];
  serverMs.length = 0;
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const cpu = process.cpuUsage();
  const until = Date.now() + m.seconds * 1000;
  await Promise.all(
    clients.map(async (c, i) => {
      // Spread over one interval, as clients that started at different times are.
      await sleep((i * m.everyMs) / clients.length);
      while (Date.now() < until) {
        const t = performance.now();
        await c.experimental.tasks.getTask(taskIds[i]!);
        latencies.push(performance.now() - t);
        await sleep(m.everyMs);
      }
    }),
  );
  loop.disable();
  const used = process.cpuUsage(cpu);
  return { first, latencies, serverMs: [...serverMs], loopDelayP99Ms: loop.percentile(99) / 1e6, cpuSeconds: (used.user + used.system) / 1e6 };
}

async function finish() {
  const limit = pLimit(16);
  await Promise.all(clients.map((c, i) => limit(() => c.experimental.tasks.cancelTask(taskIds[i]!).catch(() => undefined))));
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
}

process.on('message', (m: ToClients) => {
  const work = m.kind === 'start' ? start(m).then(() => send({ kind: 'ready' })) : m.kind === 'poll' ? poll(m).then((r) => send({ kind: 'polled', ...r })) : finish().then(() => send({ kind: 'finished' }));
  work.catch((err: unknown) => send({ kind: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) }));
});
