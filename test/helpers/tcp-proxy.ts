import net from 'node:net';
import { atTeardown } from './stack';

/**
 * A loopback TCP proxy to `target` (host:port) that a test can stall: after `stall()`, bytes sent either way are
 * held and new connections are accepted but never answered, as a server that hangs (not one that is down) behaves.
 * Closed with the stack if the test does not close it.
 */
export async function startTcpProxy(target: string): Promise<{ address: string; stall(): void; close(): Promise<void> }> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  let stalled = false;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.once('close', () => sockets.delete(s));
  };
  const server = net.createServer((client) => {
    track(client);
    if (stalled) return;
    const upstream = net.connect(port, host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }));
  atTeardown(close);
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    stall() {
      stalled = true;
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
    },
    close,
  };
}
