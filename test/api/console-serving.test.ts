import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import { errorHandler } from '../../src/http/middleware/errors';
import { CONSOLE_CSP, consoleRouter } from '../../src/http/routes/console/router';
import { readResponse } from '../helpers/api';
import { getStack } from '../helpers/stack';

const INDEX = '<!DOCTYPE html><html><head><script type="module" src="/console/assets/index-Ab12_c.js"></script></head><body><div id="app"></div></body></html>';
const SCRIPT = 'console.log("the console");';

/** The console router alone, with the API's error mapping, over `dir`, on port 0. */
async function serve(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const app = new Koa();
  app.silent = true;
  app.use(errorHandler(getStack().logger));
  app.use(consoleRouter({ dir }).routes());
  const server: Server = await new Promise((resolve) => {
    const s = http.createServer(app.callback()).listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const get = async (url: string, headers: Record<string, string> = {}) => readResponse(await fetch(url, { headers }));

describe('the console, served at /console', () => {
  let root: string;
  let built: { url: string; close(): Promise<void> };
  let empty: { url: string; close(): Promise<void> };

  before(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'console-serving-'));
    mkdirSync(path.join(root, 'build', 'assets'), { recursive: true });
    mkdirSync(path.join(root, 'none'));
    writeFileSync(path.join(root, 'build', 'index.html'), INDEX);
    writeFileSync(path.join(root, 'build', 'assets', 'index-Ab12_c.js'), SCRIPT);
    writeFileSync(path.join(root, 'build', 'assets', 'index-Zz9.css'), 'body{margin:0}');
    writeFileSync(path.join(root, 'secret.txt'), 'not for the web');
    built = await serve(path.join(root, 'build'));
    empty = await serve(path.join(root, 'none'));
  });
  after(async () => {
    await Promise.all([built?.close(), empty?.close()]);
    rmSync(root, { recursive: true, force: true });
  });

  const expectSecurityHeaders = (res: { headers: Headers }) => {
    expect(res.headers.get('content-security-policy')).to.equal(CONSOLE_CSP);
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
  };

  it('serves the page at /console with a CSP that allows no inline script, nosniff and no referrer', async () => {
    const res = await get(`${built.url}/console`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.text).to.equal(INDEX);
    expectSecurityHeaders(res);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).to.contain("script-src 'self';").and.not.contain('unsafe-inline');
    expect(csp).to.contain("frame-ancestors 'none'").and.contain("connect-src 'self'");
    expect(res.headers.get('cache-control')).to.equal('no-cache');
  });

  it('answers the page for every other path under /console, so the app’s own routes load from a bookmark', async () => {
    for (const p of ['/console/', '/console/tasks', '/console/runs/default/haiku/run-1', '/console/tokens?x=1']) {
      const res = await get(`${built.url}${p}`);
      expect(res.status, p).to.equal(200);
      expect(res.text, p).to.equal(INDEX);
      expectSecurityHeaders(res);
    }
  });

  it('answers 304 to a page request with its ETag', async () => {
    const first = await get(`${built.url}/console/tasks`);
    const again = await get(`${built.url}/console`, { 'if-none-match': first.headers.get('etag')! });
    expect(again.status).to.equal(304);
  });

  it('serves a built asset with its type, cached for good (its name changes with its content)', async () => {
    const js = await get(`${built.url}/console/assets/index-Ab12_c.js`);
    expect(js.status).to.equal(200);
    expect(js.text).to.equal(SCRIPT);
    expect(js.headers.get('content-type')).to.match(/^text\/javascript/);
    expect(js.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
    expectSecurityHeaders(js);
    const css = await get(`${built.url}/console/assets/index-Zz9.css`);
    expect(css.status).to.equal(200);
    expect(css.headers.get('content-type')).to.match(/^text\/css/);
  });

  it('answers 404 in the error shape for an asset the build does not have, and never a file outside it', async () => {
    for (const p of ['/console/assets/index-Old99.js', '/console/assets/..%2Findex.html', '/console/assets/..%2F..%2Fsecret.txt', '/console/assets/sub/x.js', '/console/assets/.hidden']) {
      const res = await get(`${built.url}${p}`);
      expect(res.status, p).to.equal(404);
      expect(res.body.error.code, p).to.equal('not_found');
      expect(res.headers.get('cache-control') ?? '', p).not.to.contain('immutable');
      expect(res.text, p).not.to.contain('not for the web');
    }
  });

  it('answers 503 saying to run npm run build:console when there is no build, never a 500', async () => {
    for (const p of ['/console', '/console/tasks', '/console/assets/index-Ab12_c.js']) {
      const res = await get(`${empty.url}${p}`);
      expect(res.status, p).to.equal(503);
      expect(res.headers.get('content-type'), p).to.match(/^text\/plain/);
      expect(res.text, p).to.contain('npm run build:console');
    }
  });

  it('is mounted on the API, without a session', async () => {
    const res = await get(`${getStack().apiUrl}/console/tasks`);
    // 200 with the build, 503 without (a checkout where `npm run build:console` has not run): never a 401 or a 404.
    expect(res.status).to.be.oneOf([200, 503]);
    expectSecurityHeaders(res);
    const post = await readResponse(await fetch(`${getStack().apiUrl}/console`, { method: 'POST' }));
    expect(post.status).to.equal(405);
  });

  it('has a build, when there is one, whose page loads its script from a file and has no inline script', function () {
    const index = path.join(__dirname, '../../console/dist/index.html');
    if (!existsSync(index)) this.skip();
    const html = readFileSync(index, 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).to.be.greaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).to.match(/src="\/console\/assets\/[^"]+\.js"/);
      expect(body!.trim()).to.equal('');
    }
    expect(html).not.to.match(/\sstyle=|<style/);
  });
});
