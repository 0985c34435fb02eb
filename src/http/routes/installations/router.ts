import type { Context } from 'koa';
import crypto from 'node:crypto';
import Router from '@koa/router';
import { notFound } from '../../../errors';
import { decodeCursor, encodeCursor } from '../../../store/keyset';
import { pageRequest, setNextLink } from '../../presenters/page';
import { installServlet, listInstalls, removeInstall } from '../../../store/installations';
import type { AppDeps, AuthState } from '../../deps';
import { presentInstall } from '../../presenters/installation';
import { parse } from '../../validate';
import { ownerFromPath } from '../users/owner';
import { mcpInstallHandlers } from './mcp';
import { installBody, installDomains, installKind, installParams, profileParams } from './schema';
import { etagFresh } from '../../not-modified';

/**
 * A profile's installs, servlets and MCP servers, in the shapes the Python client reads: install (create or
 * replace), list (with the configuration, for the owner only: nobody else reaches these paths), uninstall, and list
 * an MCP install's tools again (refresh).
 */
export function installationsRouter(deps: AppDeps) {
  const { models } = deps.db;
  const router = new Router<AuthState>();
  const mcp = mcpInstallHandlers(deps);
  const base = '/profiles/:user/:profile/installations';

  router.get(base, async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `profile "${ctx.params.user}/${ctx.params.profile}"`);
    const { profile } = parse(profileParams, ctx.params);
    // taken before the read, so every change the answer misses is stamped later than this (install-changes.ts)
    const readAt = new Date();
    const { installs, lastModified, next } = await listInstalls(models, deps.keyring, owner, profile, installsPage(ctx));
    setNextLink(ctx, next === null ? null : encodeNameCursor(next));
    const body = JSON.stringify({ installs: installs.map(presentInstall) });
    const etag = `W/"${crypto.createHash('sha256').update(body).digest('base64url')}"`;
    // The Python client sends back the Date of its last answer as If-Modified-Since; HTTP dates have whole seconds.
    ctx.set('Date', readAt.toUTCString());
    ctx.set('Last-Modified', lastModified.toUTCString());
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'private, no-cache');
    if (notModified(ctx, lastModified)) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'application/json';
    ctx.body = body;
  });

  router.post(base, async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `profile "${ctx.params.user}/${ctx.params.profile}"`);
    const { profile } = parse(profileParams, ctx.params);
    if (installKind(ctx.request.body) === 'mcp') return mcp.install(ctx, owner, profile);
    const body = parse(installBody, ctx.request.body);
    const servlet = { owner: body.servlet_slug.owner === '~' ? owner : body.servlet_slug.owner, name: body.servlet_slug.name };
    const result = await installServlet(models, deps.keyring, {
      owner,
      profile,
      name: body.name,
      servlet,
      config: body.settings?.config ?? {},
      domains: installDomains(body),
      approval: body.settings?.approval ?? null,
      allowUpdate: body.allow_update,
    });
    ctx.status = result.created ? 201 : 200;
    ctx.body = presentInstall(result);
  });

  router.post(`${base}/:name/refresh`, async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `install "${ctx.params.name}"`);
    const { profile, name } = parse(installParams, ctx.params);
    await mcp.refresh(ctx, owner, profile, name);
  });

  router.delete(`${base}/:name`, async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `install "${ctx.params.name}"`);
    const { profile, name } = parse(installParams, ctx.params);
    if (!(await removeInstall(models, owner, profile, name))) throw notFound(`install "${profile}/${name}"`);
    ctx.status = 204;
  });

  return router;
}

/**
 * `?limit=&cursor=` validated as the other lists do; without either, the whole list (the Python client reads one
 * answer). Pages go by install name: the cursor is the last name of the page before.
 */
function installsPage(ctx: Context): { limit: number; after?: string } | undefined {
  if (ctx.query.limit === undefined && ctx.query.cursor === undefined) return undefined;
  const page = pageRequest(ctx);
  return { limit: page.limit, after: page.cursor === undefined ? undefined : decodeNameCursor(page.cursor) };
}

/** An installations cursor: `["install", <the last name of the page before>]`. */
const isNameCursor = (value: unknown): value is ['install', string] => Array.isArray(value) && value.length === 2 && value[0] === 'install' && typeof value[1] === 'string';
const encodeNameCursor = (name: string) => encodeCursor(['install', name]);
const decodeNameCursor = (cursor: string) => decodeCursor(cursor, isNameCursor)[1];

/**
 * If-None-Match wins when both are sent (RFC 9110), matched as Koa's `fresh` does (not-modified.ts). If-Modified-Since is ours, stricter
 * than `fresh`: 304 only when every change was stamped before that second began, so a change within the same second
 * as the client's last answer is never hidden.
 */
function notModified(ctx: Context, lastModified: Date): boolean {
  if (ctx.get('if-none-match')) return etagFresh(ctx);
  const ifModifiedSince = ctx.get('if-modified-since');
  if (!ifModifiedSince) return false;
  const since = Date.parse(ifModifiedSince);
  return !Number.isNaN(since) && lastModified.getTime() < since;
}
