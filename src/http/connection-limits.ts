import http, { type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { answerClientErrors } from './client-errors';

/** Settings (src/config.ts) that bound what one client can hold of the API's server. */
export interface ConnectionLimits {
  /** Longest a client may take to send a whole request, headers and body: 408 `request_timeout` past it. */
  requestTimeoutMs: number;
  /** Connections open at once from one address; 0: no bound. */
  perAddress: number;
}

/** Node checks requests against their time limit this often at most (its default, 30 s, would double a short limit). */
const MAX_CHECK_INTERVAL_MS = 1_000;
/** A refused connection is closed this long after its answer, whether or not the client closes it (the answer is read first). */
const REFUSED_LINGER_MS = 1_000;

/**
 * The API's HTTP server (not listening yet): requests Node cannot parse answered in the API's error shape
 * (client-errors.ts), a request not received in full within `requestTimeoutMs` answered 408 and its connection closed
 * (Node's default, 300 s, lets a client dribbling bodies hold connections for minutes), and a connection past
 * `perAddress` from one address answered 429 `too_many_connections` and closed before any request on it is handled.
 */
export function createApiServer(listener: RequestListener, limits: ConnectionLimits): Server {
  const refused = new WeakSet<Socket>();
  const server = http.createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      // Node refuses a headers limit above the request's.
      headersTimeout: Math.min(60_000, limits.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, limits.requestTimeoutMs),
    },
    (req, res) => {
      if (!refused.has(req.socket)) listener(req, res);
    },
  );
  answerClientErrors(server);
  if (limits.perAddress > 0) limitPerAddress(server, limits.perAddress, refused);
  return server;
}

/**
 * Counts each address's open connections; one past `max` is answered and closed, and put in `refused` so that a
 * request already sent on it is not handled. Behind a reverse proxy every connection comes from the proxy's address.
 */
function limitPerAddress(server: Server, max: number, refused: WeakSet<Socket>): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      refused.add(socket);
      const body = JSON.stringify({
        error: { code: 'too_many_connections', message: `connections: more than ${max} open from this address (CONNECTIONS_PER_ADDRESS); close some and retry` },
      });
      socket.end(`HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`);
      socket.on('error', () => undefined);
      setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}
