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
    const { status, reason, code, message } = answerFor(err.code);
    const body = JSON.stringify({ error: { code, message } });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
}

/** Node's own answer to each client error, in the API's words. */
function answerFor(errorCode: string | undefined): { status: number; reason: string; code: string; message: string } {
  switch (errorCode) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'Request Header Fields Too Large', code: 'headers_too_large', message: 'headers: larger than the server takes' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, reason: 'Request Timeout', code: 'request_timeout', message: 'request: not received in full within the server\'s time limit' };
    default:
      return { status: 400, reason: 'Bad Request', code: 'invalid_http', message: `request: not valid HTTP (${errorCode ?? 'parse error'})` };
  }
}
