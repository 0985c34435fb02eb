import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { until } from '../helpers/runs';
import { startServer } from '../../src/server';

type Running = Awaited<ReturnType<typeof startServer>>;

/** A raw loopback connection to the API, whose every byte received and whose close the test can see. */
async function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, closed, received: () => received };
}

/** The JSON body of a raw HTTP answer. */
const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('connections: what one client can hold', () => {
  let running: Running | undefined;
  const start = async (overrides: Record<string, string>) => {
    running = await startServer(getStack().configWith({ PORT: '0', LOG_LEVEL: 'silent', ...overrides }));
    return (running.server.address() as AddressInfo).port;
  };
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('answers 408 and closes the connection when a body is dribbled past REQUEST_TIMEOUT_MS', async function () {
    this.timeout(60_000);
    const port = await start({ REQUEST_TIMEOUT_MS: '1000' });
    const client = await connect(port);
    const length = 2_000;
    client.socket.write(`POST /api/tasks/~/default/slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n[`);
    let sent = 1;
    // A byte every 20 ms: the whole body would take 40 s.
    const dribble = setInterval(() => {
      if (!client.socket.writable || sent >= length) return;
      client.socket.write(' ');
      sent++;
    }, 20);
    try {
      await client.closed;
    } finally {
      clearInterval(dribble);
    }
    expect(sent, 'bytes of the body sent when the server closed').to.be.below(length);
    expect(client.received()).to.match(/^HTTP\/1\.1 408 /);
    expect(bodyOf(client.received()).error.code).to.equal('request_timeout');
  });

  it('answers a connection past CONNECTIONS_PER_ADDRESS from one address 429 and closes it, and takes one again once another closes', async function () {
    this.timeout(60_000);
    const port = await start({ CONNECTIONS_PER_ADDRESS: '4' });
    const held = await Promise.all(Array.from({ length: 4 }, () => connect(port)));
    const extra = await connect(port);
    await extra.closed;
    expect(extra.received()).to.match(/^HTTP\/1\.1 429 /);
    expect(bodyOf(extra.received()).error.code).to.equal('too_many_connections');

    // The connections within the bound are served.
    held[0]!.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await until('the held connection\'s answer', () => held[0]!.received().includes('\r\n\r\n'));
    expect(held[0]!.received()).to.match(/^HTTP\/1\.1 200 /);

    held[3]!.socket.destroy();
    await held[3]!.closed;
    const again = await until('a connection taken again', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { connection: 'close' } }).catch(() => undefined);
      return res?.status === 200 && res;
    }, 10_000);
    expect(again.status).to.equal(200);
    for (const c of held) c.socket.destroy();
  });
});
