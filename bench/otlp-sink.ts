import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `--tracing`: a loopback OTLP/HTTP endpoint the API and the worker export their spans to. It counts the exports and
 * their bytes and decodes nothing, so the bench process spends next to no CPU on them (a real collector's cost is its
 * own machine's).
 */
export async function startOtlpSink() {
  const received = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (received.bytes += c.length));
    req.on('end', () => {
      received.exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
