import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node cannot parse as HTTP (bytes after a body sent without framing, a malformed header, headers past
 * the size limit) never reach the app: Node answers them itself, in plain text. This answers them in the API's error
 * shape instead, then closes the connection (what follows the bad bytes cannot be trusted to be a request).
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
    const message = status === 431 ? 'headers: larger than the server takes' : `request: not valid HTTP (${err.code ?? 'parse error'})`;
    const body = JSON.stringify({ error: { code: status === 431 ? 'headers_too_large' : 'invalid_http', message } });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
}
