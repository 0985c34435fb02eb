import crypto from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../../errors';
import type { AppDeps } from '../../deps';
import { etagFresh } from '../../not-modified';
import { API_VERSION, buildOpenApiDocument } from '../../openapi/document';
import { ASSET_NAMES, ASSETS_PATH, DOCS_CSP, DOCS_HTML, DOCS_PATH, INIT_ASSET, INIT_SCRIPT, OPENAPI_PATH, PACKAGE_ASSETS, ROOT_LINKS } from '../../openapi/docs-page';

/** The installed package's files: served from node_modules, never from a CDN. */
const PACKAGE_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

interface Served {
  type: string;
  body: Buffer;
  etag: string;
}

const served = (type: string, body: Buffer | string): Served => {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return { type, body: bytes, etag: `"${crypto.createHash('sha256').update(bytes).digest('base64url')}"` };
};

/** Answers `file` with its ETag: a 304 when the client has it. */
function send(ctx: Context, file: Served, cacheControl: string) {
  ctx.set('ETag', file.etag);
  ctx.set('Cache-Control', cacheControl);
  ctx.set('X-Content-Type-Options', 'nosniff');
  if (etagFresh(ctx)) {
    ctx.status = 304;
    return;
  }
  ctx.type = file.type;
  ctx.body = file.body;
}

/**
 * No session: `GET /` (JSON pointing to the docs page, the console and the document), `GET /api/openapi.json` (the OpenAPI 3.1 document, built once from the routes' zod schemas and this
 * server's config), `GET /docs` (Swagger UI reading it) and the page's files under `/docs/assets/`.
 */
export function docsRouter(deps: Pick<AppDeps, 'config'>): Router {
  const router = new Router();
  let document: Served | undefined;
  const assets = new Map<string, Promise<Served>>();
  const page = served('text/html; charset=utf-8', DOCS_HTML);

  const asset = (file: string): Promise<Served> => {
    let found = assets.get(file);
    if (!found) {
      found =
        file === INIT_ASSET
          ? Promise.resolve(served('text/javascript; charset=utf-8', INIT_SCRIPT))
          : readFile(path.join(PACKAGE_DIR, file)).then((bytes) => served(PACKAGE_ASSETS[file as keyof typeof PACKAGE_ASSETS], bytes));
      // A failed read is not remembered: the next request tries again.
      found.catch(() => assets.delete(file));
      assets.set(file, found);
    }
    return found;
  };

  router.get('/', (ctx) => {
    ctx.body = { service: 'prompt-task-runner', version: API_VERSION, ...ROOT_LINKS };
  });

  router.get(OPENAPI_PATH, (ctx) => {
    document ??= served('application/json; charset=utf-8', JSON.stringify(buildOpenApiDocument(deps.config)));
    send(ctx, document, 'no-cache');
  });

  router.get(DOCS_PATH, (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    send(ctx, page, 'no-cache');
  });

  router.get(`${ASSETS_PATH}/:file`, async (ctx) => {
    const file = ctx.params.file!;
    // Only the files the page uses: the name is never joined to a path unless it is one of them.
    if (!ASSET_NAMES.includes(file)) throw notFound(`file "${file}"`);
    send(ctx, await asset(file), 'public, max-age=3600');
  });

  return router;
}
