import type { Page } from 'playwright-core';

export interface Exchange {
  method: string;
  url: string;
  /** As the browser sent them (Cookie and Origin included), names in lower case. */
  requestHeaders: Record<string, string>;
  status: number;
  body: string;
}

/**
 * Records the answers to the requests of `page` whose URL starts with `prefix`, with the requests as the browser sent
 * them. They are read in the browser's network stack before its CORS check, so the answers a page of another origin
 * may not read (the API sends no CORS headers) are here too. Uses the DevTools protocol's Fetch domain, as
 * `page.route()` does: not both on one page.
 */
export async function recordAnswers(page: Page, prefix: string): Promise<{ readonly exchanges: readonly Exchange[] }> {
  const exchanges: Exchange[] = [];
  const cdp = await page.context().newCDPSession(page);
  cdp.on('Fetch.requestPaused', async (paused) => {
    try {
      const { body, base64Encoded } = await cdp.send('Fetch.getResponseBody', { requestId: paused.requestId });
      const requestHeaders = Object.fromEntries(Object.entries(paused.request.headers).map(([k, v]) => [k.toLowerCase(), v]));
      exchanges.push({
        method: paused.request.method,
        url: paused.request.url,
        requestHeaders,
        status: paused.responseStatusCode ?? 0,
        body: base64Encoded ? Buffer.from(body, 'base64').toString('utf8') : body,
      });
    } finally {
      // Let the page have the answer only once it is recorded: a page that saw it finds it in `exchanges`.
      await cdp.send('Fetch.continueRequest', { requestId: paused.requestId }).catch(() => undefined);
    }
  });
  await cdp.send('Fetch.enable', { patterns: [{ urlPattern: `${prefix}*`, requestStage: 'Response' }] });
  return { exchanges };
}
