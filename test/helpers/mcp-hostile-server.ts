import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { freePort, readBody } from './net';

/**
 * An MCP server of our own (the official SDK's McpServer and StreamableHTTPServerTransport), in this process on a
 * loopback port, for the unhappy paths a real server rarely shows on demand. Each path is a behaviour:
 * - `/mcp`: a working server whose tools misbehave on demand (TOOLS below); sessions kept until `forgetSessions()`.
 *   It runs MCP tasks (2025-11-25, the SDK's in-memory task store): `tasks/get`, `tasks/result`, `tasks/cancel`
 * - `/json`: the tools of `/mcp`, answered as plain JSON (no event streams)
 * - `/many`: a working server (the SDK's low-level Server) listing 500 tools, 50 a page; `echo-auth`: a JSON-RPC error quoting the Authorization header; other tool names: a JSON-RPC error
 * - `/401`, `/403`: that status, with the request's Authorization header echoed in the body (a server may do that)
 * - `/garbage`: 200 with an HTML page; `/hang`: never answers; `/huge`: 50 MB of JSON
 * `closedUrl` is a loopback port nothing listens on. In-process, so that `stats` are read directly; "dies mid-call"
 * destroys the call's socket after the answer began, which a client cannot tell from the server process dying.
 */
export interface HostileServer {
  base: string;
  url(path: string): string;
  closedUrl: string;
  stats: HostileStats;
  /** Drops every session: the next request carrying an old session id is answered 404. */
  forgetSessions(): Promise<void>;
}

export interface HostileStats {
  /** Sessions initialized, per path. */
  initializations: Record<string, number>;
  /** Times each tool started to run. */
  calls: Record<string, number>;
  /** Sessions ended by the client (DELETE), per path. */
  terminations: Record<string, number>;
  /** Tools whose run heard `notifications/cancelled` (the SDK aborts the handler's signal). */
  cancelled: Record<string, number>;
  /** `notifications/cancelled` received, per path, whatever request they name. */
  cancelNotices: Record<string, number>;
  /** Answer streams of each tool resumed (a GET with the `Last-Event-ID` of its broken stream). */
  resumes: Record<string, number>;
  /** `tasks/get` asked of the tasks of each task tool. */
  taskPolls: Record<string, number>;
  /** Tasks of each task tool that `tasks/cancel` cancelled. */
  taskCancels: Record<string, number>;
}

/** The tools of `/mcp` the tests name. */
export const TOOLS = {
  count: 'count',
  progress: 'progress',
  readOnly: 'read-only',
  destructive: 'destructive',
  idempotent: 'idempotent',
  /** Idempotent; every other call dies mid-answer after it ran (the first of two, the third...). */
  flakyIdempotent: 'flaky-idempotent',
  waitForCancel: 'wait-for-cancel',
  hangs: 'hangs',
  diesMidCall: 'dies-mid-call',
  diesBeforeAnswer: 'dies-before-answer',
  garbage: 'garbage',
  garbageEvent: 'garbage-event',
  huge: 'huge',
  mixed: 'mixed',
  /** Its answer stream breaks after an event with an id; a GET with that `Last-Event-ID` gets the answer. */
  breaksResumable: 'breaks-resumable',
  /** As breaks-resumable, but the GET that would resume it is answered 405. */
  breaksResumeRefused: 'breaks-resume-refused',
  /** Its answer stream ends (cleanly) without an answer and without an event id. */
  endsUnanswered: 'ends-unanswered',
  /** A tool that runs only as an MCP task (`taskSupport: required`) whose task stays `working` for ever. */
  taskNeverEnds: 'task-never-ends',
  /** A task tool whose task the server loses: after the first `tasks/get` of it, the session that made it is forgotten. */
  taskLost: 'task-lost',
} as const;

const HUGE_BYTES = 50 * 1024 * 1024;
/** 1×1 transparent PNG. */
export const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

let instance: Promise<HostileServer & { close(): Promise<void> }> | undefined;

/** The one hostile server of this mocha run, started on first use (stopped by test/setup.ts). */
export function hostileServer(): Promise<HostileServer> {
  instance ??= start();
  return instance;
}

export async function stopHostileServer(): Promise<void> {
  const started = instance;
  instance = undefined;
  await (await started)?.close();
}

async function start(): Promise<HostileServer & { close(): Promise<void> }> {
  const stats: HostileStats = { initializations: {}, terminations: {}, calls: {}, cancelled: {}, cancelNotices: {}, resumes: {}, taskPolls: {}, taskCancels: {} };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  /** The tool of each task made. */
  const taskTools = new Map<string, string>();
  /** The broken answer streams a GET may resume, by their last event id. */
  const resumable = new Map<string, { tool: string; requestId: unknown }>();
  let streams = 0;
  const sockets = new Set<net.Socket>();
  const bump = (map: Record<string, number>, key: string) => (map[key] = (map[key] ?? 0) + 1);

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/401' || path === '/403') {
      await readBody(req);
      res.writeHead(Number(path.slice(1)), { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
      return void res.end(`denied; you sent: ${req.headers.authorization ?? '(nothing)'} ${req.headers['x-api-key'] ?? ''}`);
    }
    if (path === '/garbage') {
      await readBody(req);
      res.writeHead(200, { 'content-type': 'text/html' });
      return void res.end('<html><body>Welcome to nginx!</body></html>');
    }
    if (path === '/hang') return; // never answers; the socket is destroyed when the server closes
    if (path === '/huge') {
      await readBody(req);
      res.writeHead(200, { 'content-type': 'application/json' });
      return sendHuge(res, '{"jsonrpc":"2.0","id":0,"result":{"padding":"', '"}}');
    }
    if (path !== '/mcp' && path !== '/many' && path !== '/json') return void res.writeHead(404).end('not found');

    const body = req.method === 'POST' ? JSON.parse((await readBody(req)) || 'null') : undefined;
    const raw = body && body.method === 'tools/call' ? rawTool(body, req, res) : false;
    if (raw) return;
    const lastEventId = req.method === 'GET' ? req.headers['last-event-id'] : undefined;
    const broken = typeof lastEventId === 'string' ? resumable.get(lastEventId) : undefined;
    if (broken) {
      resumable.delete(lastEventId as string);
      bump(stats.resumes, broken.tool);
      if (broken.tool === TOOLS.breaksResumeRefused) return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const answer = { jsonrpc: '2.0', id: broken.requestId, result: { content: [{ type: 'text', text: 'resumed' }] } };
      return void res.end(`id: ${lastEventId}-2\nevent: message\ndata: ${JSON.stringify(answer)}\n\n`);
    }
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId !== undefined || body?.method !== 'initialize') {
        res.writeHead(404, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: body?.id ?? null }));
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: path === '/json',
        onsessioninitialized: (id) => {
          sessions.set(id, created);
          bump(stats.initializations, path);
        },
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await (path === '/many' ? manyToolsServer() : toolsServer()).connect(created);
      transport = created;
    }
    if (req.method === 'DELETE') bump(stats.terminations, path);
    if (body?.method === 'notifications/cancelled') bump(stats.cancelNotices, path);
    const taskTool = body?.method === 'tasks/get' ? taskTools.get(body.params?.taskId) : undefined;
    if (taskTool) bump(stats.taskPolls, taskTool);
    if (taskTool === TOOLS.taskLost) {
      // Answered, then the session (and with it the task) is gone, as after a restart of the server.
      const lost = transport;
      res.once('close', () => {
        if (lost.sessionId) sessions.delete(lost.sessionId);
        void lost.close().catch(() => undefined);
      });
    }
    await transport.handleRequest(req, res, body);
  }

  /** The task store of every session: counts the tasks `tasks/cancel` cancelled (nothing else cancels one here). */
  class CountingTaskStore extends InMemoryTaskStore {
    override async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string, sessionId?: string): Promise<void> {
      await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
      const tool = taskTools.get(taskId);
      if (status === 'cancelled' && tool) bump(stats.taskCancels, tool);
    }
  }
  const taskStore = new CountingTaskStore();

  /** The tools that misbehave below MCP (on the socket): answered here, before the SDK sees the request. */
  function rawTool(body: { id: number; params?: { name?: string } }, req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const name = body.params?.name;
    switch (name) {
      case TOOLS.flakyIdempotent:
        // Every other call dies mid-answer (after the tool ran); the others are answered by the SDK's tool below.
        if (bump(stats.calls, name) % 2 === 0) return false;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': the tool ran, and the answer is lost\n\n');
        setTimeout(() => req.socket.destroy(), 20);
        return true;
      case TOOLS.diesMidCall:
        bump(stats.calls, name);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'about to die' } })}\n\n`);
        setTimeout(() => req.socket.destroy(), 20);
        return true;
      case TOOLS.diesBeforeAnswer:
        bump(stats.calls, name);
        req.socket.destroy();
        return true;
      case TOOLS.breaksResumable:
      case TOOLS.breaksResumeRefused: {
        bump(stats.calls, name);
        const eventId = `stream-${++streams}`;
        resumable.set(eventId, { tool: name, requestId: body.id });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`id: ${eventId}\nretry: 50\ndata: \n\n`);
        setTimeout(() => req.socket.destroy(), 20);
        return true;
      }
      case TOOLS.endsUnanswered:
        bump(stats.calls, name);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(': nothing to say\n\n');
        return true;
      case TOOLS.garbage:
        bump(stats.calls, name);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('<html>this is not JSON</html>');
        return true;
      case TOOLS.garbageEvent:
        bump(stats.calls, name);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message\ndata: this is not JSON\n\n');
        return true;
      case TOOLS.huge:
        bump(stats.calls, name);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        void sendHuge(res, `event: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`, '"}]}}\n\n');
        return true;
      default:
        return false;
    }
  }

  function toolsServer(): McpServer {
    const mcp = new McpServer({ name: 'hostile', version: '1.0.0' }, { capabilities: { logging: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } }, taskStore });
    const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
    mcp.registerTool(TOOLS.count, { description: 'Counts its calls', inputSchema: { note: z.string().optional() } }, async () => text(`call ${bump(stats.calls, TOOLS.count)}`));
    mcp.registerTool(TOOLS.progress, { description: 'Reports progress and logs' }, async (extra) => {
      bump(stats.calls, TOOLS.progress);
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= 3; i++) {
        if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 3, message: `step ${i}` } });
        await extra.sendNotification({ method: 'notifications/message', params: { level: i === 3 ? 'warning' : 'info', logger: 'hostile', data: `working on step ${i}` } });
      }
      return text('done');
    });
    mcp.registerTool(TOOLS.readOnly, { description: 'Reads', annotations: { readOnlyHint: true } }, async () => text('read'));
    mcp.registerTool(TOOLS.destructive, { description: 'Deletes', annotations: { readOnlyHint: false, destructiveHint: true } }, async () => text('deleted'));
    mcp.registerTool(TOOLS.flakyIdempotent, { description: 'Sets, and loses every other answer', annotations: { destructiveHint: false, idempotentHint: true } }, async () =>
      text(`set after ${stats.calls[TOOLS.flakyIdempotent]} calls`),
    );
    mcp.registerTool(TOOLS.idempotent, { description: 'Sets', annotations: { destructiveHint: false, idempotentHint: true } }, async () => text(`set ${bump(stats.calls, TOOLS.idempotent)}`));
    const untilCancelled = (name: string) => async (extra: { signal: AbortSignal }) => {
      bump(stats.calls, name);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 60_000);
        extra.signal.addEventListener('abort', () => {
          bump(stats.cancelled, name);
          clearTimeout(timer);
          resolve();
        });
      });
      return text('finished');
    };
    mcp.registerTool(TOOLS.waitForCancel, { description: 'Waits until cancelled' }, untilCancelled(TOOLS.waitForCancel));
    mcp.registerTool(TOOLS.hangs, { description: 'Never answers' }, untilCancelled(TOOLS.hangs));
    for (const name of [TOOLS.taskNeverEnds, TOOLS.taskLost]) {
      mcp.experimental.tasks.registerToolTask(
        name,
        { description: 'Runs as a task', execution: { taskSupport: 'required' } },
        {
          // Made `working`, and left so: nothing here ever ends it.
          createTask: async (extra) => {
            bump(stats.calls, name);
            const task = await extra.taskStore.createTask({ ttl: 600_000, pollInterval: 200 });
            taskTools.set(task.taskId, name);
            return { task };
          },
          getTask: async (extra) => (await extra.taskStore.getTask(extra.taskId))!,
          getTaskResult: async (extra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
        },
      );
    }
    mcp.registerTool(TOOLS.mixed, { description: 'Every kind of content' }, async () => ({
      content: [
        { type: 'text', text: 'plain text' },
        { type: 'image', data: TINY_PNG, mimeType: 'image/png' },
        { type: 'audio', data: Buffer.alloc(3000).toString('base64'), mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///notes.txt', name: 'notes.txt', mimeType: 'text/plain', description: 'the notes' },
        { type: 'resource', resource: { uri: 'file:///inline.txt', mimeType: 'text/plain', text: 'inline resource text' } },
        { type: 'resource', resource: { uri: 'file:///blob.bin', mimeType: 'application/octet-stream', blob: Buffer.alloc(900).toString('base64') } },
      ],
      structuredContent: { answer: 42 },
    }));
    return mcp;
  }

  function manyToolsServer(): Server {
    const PAGE = 50;
    const low = new Server({ name: 'many', version: '1.0.0' }, { capabilities: { tools: {} } });
    low.setRequestHandler(ListToolsRequestSchema, async (request) => {
      const from = request.params?.cursor ? Number(request.params.cursor) : 0;
      const tools = Array.from({ length: Math.min(PAGE, 500 - from) }, (_, i) => ({
        name: `tool-${from + i}`,
        description: `Tool number ${from + i}`,
        inputSchema: { type: 'object' as const, properties: {} },
      }));
      return { tools, ...(from + PAGE < 500 ? { nextCursor: String(from + PAGE) } : {}) };
    });
    low.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      // A careless server that quotes the credentials it was sent in its error.
      if (request.params.name === 'echo-auth') throw new McpError(ErrorCode.InvalidRequest, `bad token: ${extra.requestInfo?.headers.authorization}`);
      // A JSON-RPC error, as a server without McpServer's wrapping answers a tool it does not have.
      if (!/^tool-\d+$/.test(request.params.name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      return { content: [{ type: 'text', text: `ran ${request.params.name}` }] };
    });
    return low;
  }

  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    url: (path) => `${base}${path}`,
    closedUrl: `http://127.0.0.1:${await freePort()}/mcp`,
    stats,
    async forgetSessions() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((t) => t.close().catch(() => undefined)));
    },
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      taskStore.cleanup();
      sessions.clear();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** 50 MB between `head` and `tail`, written as the client reads it; stops when the client goes away. */
async function sendHuge(res: http.ServerResponse, head: string, tail: string): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  res.write(head);
  for (let sent = 0; sent < HUGE_BYTES && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  if (!res.destroyed) res.end(tail);
}
