import crypto from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import { etagFresh } from '../../not-modified';
import { CONSOLE_PATH } from '../../openapi/docs-page';

/** docs/console.md ("Serving"): the console's own scripts only, no inline script; styles from its CSS file. */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export const CONSOLE_ASSETS_PATH = `${CONSOLE_PATH}/assets`;

/** What a missing build answers, in words a person can act on. */
export const CONSOLE_NOT_BUILT = 'The console is not built. Run `npm run build:console` (or `npm install`, which builds it), then reload this page.\n';

/** Vite names each asset by a hash of its content: a name never changes meaning, so browsers keep it for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The only asset names served: no separator, so a name is never more than a file of the folder. */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** The checkout's root (or the image's /app): the nearest folder above this file with a package.json, from src/ or dist/src/. */
function packageRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

export interface ConsoleOptions {
  /** The built console (`index.html`, `assets/`); `console/dist` of the checkout by default. */
  dir?: string;
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException)?.code === 'ENOENT' || (err as NodeJS.ErrnoException)?.code === 'ENOTDIR';

/**
 * `GET /console` and everything under it, without a session (the app asks the API, which answers 401 until it has one):
 * files under `/console/assets/` as built, cached for good; any other path the app's `index.html`, so the app's own
 * routes load from a bookmark. The build is read from disk at each request, so a rebuild while the API runs is
 * served at once. No build: 503 saying how to make one.
 */
export function consoleRouter(options: ConsoleOptions = {}): Router {
  const dir = options.dir ?? path.join(packageRoot(), 'console', 'dist');
  const router = new Router();

  const secure = (ctx: Context) => {
    ctx.set('Content-Security-Policy', CONSOLE_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
  };
  const notBuilt = (ctx: Context) => {
    ctx.status = 503;
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = CONSOLE_NOT_BUILT;
  };
  const send = (ctx: Context, body: Buffer, type: string, cacheControl: string) => {
    ctx.set('ETag', `"${crypto.createHash('sha256').update(body).digest('base64url')}"`);
    ctx.set('Cache-Control', cacheControl);
    if (etagFresh(ctx)) {
      ctx.status = 304;
      return;
    }
    ctx.type = type;
    ctx.body = body;
  };

  const index = async (ctx: Context) => {
    secure(ctx);
    // Under assets/ only files of the build: a name that is not one is a 404, never the page.
    if (ctx.path.startsWith(`${CONSOLE_ASSETS_PATH}/`)) throw notFound(`asset "${ctx.path.slice(CONSOLE_ASSETS_PATH.length + 1)}"`);
    let page: Buffer;
    try {
      page = await readFile(path.join(dir, 'index.html'));
    } catch (err) {
      if (isMissing(err)) return notBuilt(ctx);
      throw err;
    }
    send(ctx, page, 'text/html; charset=utf-8', 'no-cache');
  };

  router.get(`${CONSOLE_ASSETS_PATH}/:file`, async (ctx) => {
    secure(ctx);
    const file = ctx.params.file!;
    let names: string[] = [];
    try {
      names = await readdir(path.join(dir, 'assets'));
    } catch (err) {
      if (!isMissing(err)) throw err;
      if (!existsSync(path.join(dir, 'index.html'))) return notBuilt(ctx);
    }
    // Joined to the folder only when it is one of the folder's own names.
    if (!ASSET_NAME.test(file) || !names.includes(file)) throw notFound(`asset "${file}"`);
    const body = await readFile(path.join(dir, 'assets', file));
    send(ctx, body, TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream', IMMUTABLE);
  });
  router.get(CONSOLE_PATH, index);
  router.get(/^\/console\/.*$/, index);
  return router;
}
