import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingServer {
  /** Base URL, e.g. http://127.0.0.1:40123 */
  url: string;
  port: number;
  hits: number;
  /** Request headers of every hit, in order. */
  requests: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

/**
 * A loopback HTTP server that counts the requests that reach it (the only kind of server these tests send
 * anything to). `handler` answers; the default says "reached <path>".
 */
export async function startCountingServer(
  host: '127.0.0.1' | '127.0.0.2' | '::1' = '127.0.0.1',
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (req, res) => res.end(`reached ${req.url}`),
): Promise<CountingServer> {
  const server = http.createServer((req, res) => {
    state.hits++;
    state.requests.push(req.headers);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const state: CountingServer = {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    hits: 0,
    requests: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  return state;
}
