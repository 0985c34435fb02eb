import Router, { type RouterContext } from '@koa/router';
import { contentAddress, createServletRuntime, ServletError, type DescribeResult } from '../../../../activities/servlets';
import { badRequest, notFound } from '../../../errors';
import {
  deleteServlet,
  findVisibleServlet,
  installationCounts,
  listOwnServlets,
  publishServlet,
  searchServlets,
  type ServletRecord,
} from '../../../store/servlets';
import type { AppDeps, AuthState } from '../../deps';
import { pageRequest, sendPage } from '../../presenters/page';
import { presentServlet, presentServletSearchResult } from '../../presenters/servlet';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { readModuleUpload } from './module-upload';
import { searchQuery, servletParams } from './schema';

type Ctx = RouterContext<AuthState>;

/** Each describe at publish runs in its own worker thread: a burst of publishes waits instead of piling them up. */
const CONCURRENT_DESCRIBES = 4;

/**
 * The servlet library: publish (PUT, raw module or JSON), read, list own, delete, and search over public servlets
 * and the caller's own. Another user's private servlet is a 404 like a missing one.
 */
export function servletsRouter(deps: AppDeps) {
  const { models } = deps.db;
  // Only `describe` is used here: each call starts and closes its own plugin, and no pool is ever kept, so the
  // runtime holds nothing that must be closed with the app.
  const runtime = createServletRuntime({ config: deps.config, logger: deps.logger });
  const describe = limitConcurrency(CONCURRENT_DESCRIBES, (bytes: Uint8Array) => runtime.describe(bytes));
  const router = new Router<AuthState>();

  const withCounts = async (servlets: ServletRecord[]) => {
    const counts = await installationCounts(models, servlets);
    return (s: ServletRecord) => counts.get(`${s.owner}/${s.name}`) ?? 0;
  };

  router.get('/servlets', async (ctx) => {
    const { q } = parse(searchQuery, { q: ctx.query.q }, 'query');
    const page = await searchServlets(models, ctx.state.username, q, pageRequest(ctx));
    const count = await withCounts(page.items);
    sendPage(ctx, page, (s) => presentServletSearchResult(s, count(s)));
  });

  router.get('/servlets/:user', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    const page = await listOwnServlets(models, owner, pageRequest(ctx));
    const count = await withCounts(page.items);
    sendPage(ctx, page, (s) => presentServlet(s, count(s)));
  });

  // Another user's servlet is readable when it is public (it can be found by search and installed anyway).
  router.get('/servlets/:user/:servlet', async (ctx) => {
    const ref = servletRef(ctx, true);
    const servlet = await findVisibleServlet(models, ctx.state.username, ref);
    if (!servlet) throw notFound(`servlet "${ctx.params.user}/${ref.name}"`);
    ctx.body = presentServlet(servlet, (await withCounts([servlet]))(servlet));
  });

  router.put('/servlets/:user/:servlet', async (ctx) => {
    const ref = servletRef(ctx, false);
    const upload = await readModuleUpload(ctx, deps.config.MODULE_LIMIT_BYTES);
    let described: DescribeResult;
    try {
      described = await describe(upload.bytes);
    } catch (err) {
      if (err instanceof ServletError) throw badRequest(`module: ${err.message}`, 'invalid_module');
      throw err;
    }
    const tools = described.tools.map((t) => ({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema }));
    const { servlet, created } = await publishServlet(models, {
      ...ref,
      description: upload.description,
      visibility: upload.visibility,
      contentAddress: contentAddress(upload.bytes),
      bytes: upload.bytes,
      tools,
    });
    ctx.status = created ? 201 : 200;
    ctx.body = presentServlet(servlet, (await withCounts([servlet]))(servlet));
  });

  router.delete('/servlets/:user/:servlet', async (ctx) => {
    const ref = servletRef(ctx, false);
    if (!(await deleteServlet(models, ref))) throw notFound(`servlet "${ref.name}"`);
    ctx.status = 204;
  });

  return router;
}

/** `:user/:servlet` of the path; another user's name is a 404 unless `othersAllowed` (reads of public servlets). */
function servletRef(ctx: Ctx, othersAllowed: boolean) {
  const user = ctx.params.user!;
  const owner = othersAllowed && user !== '~' ? user : ownerFromPath(ctx, user, `servlet "${user}/${ctx.params.servlet}"`);
  const { servlet } = parse(servletParams, ctx.params);
  return { owner, name: servlet };
}

/** Runs at most `limit` calls of `fn` at once; the others wait their turn in order. */
function limitConcurrency<A, R>(limit: number, fn: (arg: A) => Promise<R>): (arg: A) => Promise<R> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (arg) => {
    // a finishing call hands its slot straight to the next waiter, so a newcomer cannot slip in between
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await fn(arg);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
