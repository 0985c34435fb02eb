import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestPage {
  body: string;
  /** `text/html; charset=utf-8` unless given. */
  contentType?: string;
  headers?: Record<string, string>;
}

export interface PageServer {
  /** `http://127.0.0.1:<port>`: an origin of its own, beside the API's. */
  url: string;
  close(): Promise<void>;
}

/** A loopback HTTP server answering GET <path> with the page given for it, and 404 for any other path. */
export async function servePages(pages: Record<string, TestPage>): Promise<PageServer> {
  const server = http.createServer((req, res) => {
    const page = pages[new URL(req.url ?? '/', 'http://x').pathname];
    if (!page || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': page.contentType ?? 'text/html; charset=utf-8', ...page.headers }).end(page.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
