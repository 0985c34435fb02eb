import type http from 'node:http';
import net from 'node:net';
import { portOpen, waitFor } from '../../src/cli/dev-processes';

/** A free loopback port (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port; rejects after `timeoutMs`. */
export function waitForPort(port: number, timeoutMs: number): Promise<void> {
  return waitFor(() => portOpen(port), `a listener on 127.0.0.1:${port}`, timeoutMs);
}

/** A test server's request body, whole, as UTF-8 text. */
export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
