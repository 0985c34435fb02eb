import { expect } from 'chai';
import { useBrowser } from '../helpers/browser';
import { CONSOLE_CSP } from './csp';
import { servePages, type PageServer } from './page-server';
import { scriptProbe } from './script-probe';

/**
 * What the XSS tests rely on: the harness tells a script that ran from one that did not. The same three would-be
 * scripts (an inline script, an image's `onerror`, a `javascript:` link) run on a page without a policy and are
 * blocked by the console's Content-Security-Policy, where the page's own script file still runs.
 */
const page = `<!doctype html><html lang="en"><head><title>Scripts</title><script src="/own.js"></script></head><body><main>
<script>ptrProbe('inline')</script>
<img src="/missing.png" alt="missing" onerror="ptrProbe('onerror')">
<a href="javascript:ptrProbe('link')">a link</a>
<button type="button" id="after-link">After the link</button>
</main></body></html>`;

/** The page's own script: a marker once every image has loaded or failed (their `onerror` has run by then). */
const ownScript = `ptrProbe('own');
addEventListener('load', () => setTimeout(() => ptrProbe('loaded')));
addEventListener('DOMContentLoaded', () => document.getElementById('after-link').addEventListener('click', () => ptrProbe('after-link')));`;

describe('the browser harness seeing scripts run', () => {
  const b = useBrowser();
  let server: PageServer;
  before(async () => {
    server = await servePages({
      '/open': { body: page },
      '/guarded': { body: page, headers: { 'content-security-policy': CONSOLE_CSP } },
      '/own.js': { body: ownScript, contentType: 'text/javascript', headers: { 'content-security-policy': CONSOLE_CSP } },
    });
  });
  after(() => server?.close());

  /** Opens the page, clicks its `javascript:` link, and returns every script call the probe saw by the end. */
  async function callsOn(path: string): Promise<readonly string[]> {
    const probe = await scriptProbe(b.context);
    await b.page.goto(`${server.url}${path}`);
    await probe.waitFor('loaded');
    await b.page.getByRole('link', { name: 'a link' }).click();
    await b.page.getByRole('button', { name: 'After the link' }).click();
    await probe.waitFor('after-link');
    return probe.calls;
  }

  it('sees the inline script, the onerror handler and the javascript: link run on a page without a policy', async () => {
    expect(await callsOn('/open')).to.have.members(['own', 'inline', 'onerror', 'loaded', 'link', 'after-link']);
  });

  it('sees none of them run under the console\'s Content-Security-Policy, while the page\'s own script does', async () => {
    expect(await callsOn('/guarded')).to.have.members(['own', 'loaded', 'after-link']);
  });
});
