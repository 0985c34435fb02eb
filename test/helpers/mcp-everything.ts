import path from 'node:path';
import { ManagedProcess } from './managed-process';
import { freePort, waitForPort } from './net';

/**
 * The pinned `@modelcontextprotocol/server-everything` (package.json) in `streamableHttp` mode: a real MCP server
 * nobody here wrote. Started on first use, once per mocha run, and stopped by the root hooks (test/setup.ts). It
 * listens on every interface and reports no port given as 0, so the port is picked here; the tests reach it through
 * 127.0.0.1 only.
 */
let server: { process: ManagedProcess; url: string } | undefined;
let starting: Promise<{ url: string }> | undefined;

const BIN = path.join(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** The server's MCP endpoint, `http://127.0.0.1:<port>/mcp`, started unless it runs. */
export async function everythingServer(): Promise<{ url: string }> {
  if (server?.process.running) return { url: server.url };
  starting ??= (async () => {
    const port = await freePort();
    const process_ = new ManagedProcess('mcp-everything', {
      command: process.execPath,
      args: [BIN, 'streamableHttp'],
      env: { PORT: String(port) },
      ready: () => waitForPort(port, 20_000),
      readyTimeoutMs: 20_000,
    });
    await process_.start();
    server = { process: process_, url: `http://127.0.0.1:${port}/mcp` };
    return { url: server.url };
  })().finally(() => (starting = undefined));
  return starting;
}

/** Restarts the server on the same port: it forgets every session (as a deployment of a real server does). */
export async function restartEverythingServer(): Promise<void> {
  if (!server) throw new Error('server-everything is not running');
  await server.process.stop(5_000);
  await server.process.start();
}

export async function stopEverythingServer(): Promise<void> {
  await server?.process.stop(5_000);
  server = undefined;
}

process.on('exit', () => server?.process.killNow());
