import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { atTeardown } from './stack';

/**
 * A loopback HTTP proxy to `target` that adds `Authorization` to every request (MCP tools that send none, such as the
 * conformance suite, reach the service as a configured client would). Everything else passes unchanged, `Host` and
 * `Origin` included, and answers stream through (event streams too). Closed with the stack if the test does not.
 */
export async function startAuthProxy(target: string, authorization: string): Promise<{ url: string; close(): Promise<void> }> {
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, authorization } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  const close = () => {
    server.closeAllConnections();
    return (closing ??= new Promise<void>((resolve) => server.close(() => resolve())));
  };
  atTeardown(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}
