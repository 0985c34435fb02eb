/**
 * The `mcp-server` part: what calling a task as an MCP tool adds over triggering the same run with `PUT` and polling
 * it, and `tasks/get` under 200 MCP clients at once, each polling a live run it started as an MCP task.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import pLimit from 'p-limit';
import { inFlight, percentile, round } from './measure';

export interface McpServerBenchDeps {
  apiUrl: string;
  /** The bench user's session id (its `Authorization: Bearer`). */
  session: string;
  /** The default profile's task `bench` (`Say {{ text }}`); a text with "hold" hangs at the fake provider. */
  task: string;
  log: (msg: string) => void;
}

export interface McpServerFigures {
  /** Serial, from the request to the answer with the run's end: MCP `tools/call` vs `PUT` then polling. */
  callMs: { p50: number; p99: number; putP50: number; putP99: number; addedP50: number };
  /** 200 clients polling `tasks/get` of their own live task. */
  taskPolls: { clients: number; polls: number; p50Ms: number; p99Ms: number };
}

const SERIAL = 50;
const CLIENTS = 200;
const POLL_SECONDS = 10;

export async function benchMcpServer(deps: McpServerBenchDeps): Promise<McpServerFigures> {
  const { apiUrl, session, task, log } = deps;
  const headers = { Authorization: `Bearer ${session}`, 'content-type': 'application/json' };
  const connect = async () => {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${apiUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${session}` } } }));
    return client;
  };

  log(`mcp-server: ${SERIAL} serial tool calls, and as many PUT triggers polled to the end...`);
  const client = await connect();
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

  log(`mcp-server: ${CLIENTS} clients, each polling its own live task for ${POLL_SECONDS} s...`);
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connect()));
  const limit = pLimit(32);
  const tasks = await Promise.all(
    clients.map((c, i) => limit(() => c.request({ method: 'tools/call', params: { name: task, arguments: { text: `hold ${i}` }, task: {} } }, CreateTaskResultSchema))),
  );
  const latencies: number[] = [];
  const until = Date.now() + POLL_SECONDS * 1000;
  await Promise.all(
    clients.map(async (c, i) => {
      const { taskId } = tasks[i]!.task;
      while (Date.now() < until) {
        const t = performance.now();
        await c.experimental.tasks.getTask(taskId);
        latencies.push(performance.now() - t);
        // The poll interval the task gives (1 s) would leave the server idle: poll ten times as often.
        await sleep(100);
      }
    }),
  );
  await Promise.all(clients.map((c, i) => limit(() => c.experimental.tasks.cancelTask(tasks[i]!.task.taskId).catch(() => undefined))));
  await Promise.all(clients.map((c) => c.close()));

  const [p50, p99, putP50, putP99] = [percentile(calls.latencies, 50), percentile(calls.latencies, 99), percentile(puts.latencies, 50), percentile(puts.latencies, 99)];
  return {
    callMs: { p50: round(p50), p99: round(p99), putP50: round(putP50), putP99: round(putP99), addedP50: round(p50 - putP50) },
    taskPolls: { clients: CLIENTS, polls: latencies.length, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)) },
  };
}

/** The part's rows of the bench's table. */
export function mcpServerRows(r: McpServerFigures): Array<[string, string, string, string]> {
  return [
    ['MCP tools/call → end p50 (serial)', `${r.callMs.p50} ms`, `${r.callMs.putP50} ms (PUT + polls)`, `added: ${r.callMs.addedP50} ms`],
    ['MCP tools/call → end p99 (serial)', `${r.callMs.p99} ms`, `${r.callMs.putP99} ms (PUT + polls)`, ''],
    [`tasks/get, ${r.taskPolls.clients} clients, p99`, `${r.taskPolls.p99Ms} ms`, '—', '≤ 50 ms'],
    [`  p50 (${r.taskPolls.polls} polls)`, `${r.taskPolls.p50Ms} ms`, '—', ''],
  ];
}
