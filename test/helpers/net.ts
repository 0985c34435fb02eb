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
