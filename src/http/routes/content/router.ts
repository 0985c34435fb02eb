import Router from '@koa/router';
import { notFound } from '../../../errors';
import { mayReadModule } from '../../../store/installations';
import { loadModule } from '../../../store/modules';
import type { AppDeps, AuthState } from '../../deps';
import { etagFresh } from '../../not-modified';

const CONTENT_ADDRESS = /^[0-9a-f]{64}$/;

/**
 * `GET /api/c/<content address>`: a module's bytes, for the owner of a servlet with that content or of a profile
 * that installs one (the Python client downloads modules here to run tools locally). Anyone else gets the same
 * 404 as for an address that does not exist. The bytes at an address never change: a strong ETag and a year of
 * private caching.
 */
export function contentRouter(deps: AppDeps) {
  const { models } = deps.db;
  const router = new Router<AuthState>();

  router.get('/c/:address', async (ctx) => {
    const address = ctx.params.address!;
    const missing = () => notFound(`module "${address}"`);
    if (!CONTENT_ADDRESS.test(address) || !(await mayReadModule(models, ctx.state.username, address))) throw missing();
    const etag = `"${address}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, max-age=31536000, immutable');
    if (etagFresh(ctx)) {
      ctx.status = 304;
      return;
    }
    const bytes = await loadModule(models, address);
    if (!bytes) throw missing();
    ctx.type = 'application/wasm';
    ctx.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  });

  return router;
}
