import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { api, signedIn, uniqueUser } from '../helpers/api';
import { useBrowser } from '../helpers/browser';
import { getStack } from '../helpers/stack';
import { recordAnswers, type Exchange } from './answers';
import { servePages, type PageServer } from './page-server';

/**
 * The cross-site rule (issue 32) in a real browser: a page of another origin on the same machine (another port, so
 * the same site: the `SameSite=Lax` session cookie goes along) posts to the API with the person's cookie. The POST is a
 * profile's creation with no body, which a browser sends without asking the API first (no CORS preflight), and which
 * would make the profile if the API let it through.
 */
describe('cookie-authenticated requests from a browser page', () => {
  const b = useBrowser();
  let elsewhere: PageServer;
  before(async () => {
    elsewhere = await servePages({ '/': { body: '<!doctype html><html lang="en"><title>Elsewhere</title><main>another origin</main></html>' } });
  });
  after(() => elsewhere?.close());

  /** Signs the browser in as a person does: a one-time link's token, exchanged on the API's own origin. */
  async function signIn(page: Page): Promise<{ sessionId: string }> {
    const { sessionId, api: asUser } = await signedIn('xsite');
    const link = await asUser.post('/api/sign-in-links', {});
    expect(link.status, link.text).to.equal(201);
    const token = new URLSearchParams(new URL(link.body.url as string).hash.slice(1)).get('token');
    await page.goto(`${getStack().apiUrl}/healthz`);
    const status = await page.evaluate(
      async (t) => (await fetch('/api/sign-in', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: t }) })).status,
      token,
    );
    expect(status, 'POST /api/sign-in').to.equal(204);
    const cookie = (await page.context().cookies(getStack().apiUrl)).find((c) => c.name === 'sessionId');
    expect(cookie, 'the session cookie').to.include({ httpOnly: true, sameSite: 'Lax' });
    return { sessionId };
  }

  /**
   * The page's `fetch(url, {method: 'POST', credentials: 'include'})`: what the page could read of the answer (its
   * status, or the error a page of another origin gets), and the request and answer as the browser's network saw them.
   */
  async function postFrom(page: Page, url: string): Promise<{ seenByPage: number | string; exchange: Exchange }> {
    const answers = await recordAnswers(page, url);
    const seenByPage = await page.evaluate(
      (u) => fetch(u, { method: 'POST', credentials: 'include' }).then((r) => r.status, (e: Error) => `${e.name}: ${e.message}`),
      url,
    );
    expect(answers.exchanges, `the answers to POST ${url}`).to.have.length(1);
    return { seenByPage, exchange: answers.exchanges[0]! };
  }

  it('accepts a POST from a page on the API\'s own origin, signed in by the cookie', async () => {
    const { sessionId } = await signIn(b.page);
    const profile = uniqueUser('own');
    const { seenByPage, exchange } = await postFrom(b.page, `${getStack().apiUrl}/api/profiles/~/${profile}`);
    expect(exchange.status, exchange.body).to.equal(201);
    expect(seenByPage).to.equal(201);
    expect((await api(sessionId).get(`/api/profiles/~/${profile}`)).status).to.equal(200);
  });

  // Enabled by the lead with the one above.
  it('refuses a POST from a page on another loopback origin with 403 cross_site_request, though the cookie went along', async () => {
    const { sessionId } = await signIn(b.page);
    await b.page.goto(`${elsewhere.url}/`);
    const profile = uniqueUser('foreign');
    const { seenByPage, exchange } = await postFrom(b.page, `${getStack().apiUrl}/api/profiles/~/${profile}`);
    expect(exchange.requestHeaders.origin).to.equal(elsewhere.url);
    expect(exchange.requestHeaders.cookie, 'the browser sent the session cookie').to.contain('sessionId=');
    expect(exchange.status, exchange.body).to.equal(403);
    expect(JSON.parse(exchange.body).error.code).to.equal('cross_site_request');
    // The page itself learns nothing of the answer (no CORS headers).
    expect(seenByPage).to.equal('TypeError: Failed to fetch');
    expect((await api(sessionId).get(`/api/profiles/~/${profile}`)).status, 'the profile was not made').to.equal(404);
  });
});
