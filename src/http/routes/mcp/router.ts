import Router from '@koa/router';
import { AppError } from '../../../errors';
import { DEFAULT_PROFILE, findProfile } from '../../../store/profiles';
import { NAME_PATTERN } from '../../../store/names';
import type { AppDeps, AuthState } from '../../deps';
import { parse } from '../../validate';
import { sseUrlBody } from './schema';

/** The MCP endpoint of `profile` (src/mcp-server/http.ts serves it). */
export const mcpEndpointUrl = (base: string, profile: string) => `${base}/mcp${profile === DEFAULT_PROFILE ? '' : `/${profile}`}`;

/**
 * `POST /api/mcp/sse/url` (the Python client's `Client.mcp_sse()`): the URL of the profile's MCP endpoint, as text.
 * It speaks Streamable HTTP and takes `Authorization: Bearer <token>` (docs/mcp.md): no credential is put in the URL.
 * A 404 says why when there is no such profile of the session's user.
 */
export function mcpRouter(deps: AppDeps): Router<AuthState> {
  const router = new Router<AuthState>();
  router.post('/mcp/sse/url', async (ctx) => {
    const body = parse(sseUrlBody, ctx.request.body);
    const me = ctx.state.username;
    const slug = body.activeProfile ?? `~/${DEFAULT_PROFILE}`;
    const [user, name] = slug.includes('/') ? slug.split('/', 2) : ['~', slug];
    const missing = () => new AppError(404, 'not_found', `profile "${slug}" not found among yours, so there is no MCP endpoint for it (a profile's endpoint is ${mcpEndpointUrl(deps.config.PUBLIC_URL, '<profile>')})`);
    if ((user !== '~' && user !== me) || !name || !NAME_PATTERN.test(name)) throw missing();
    if (!(await findProfile(deps.db.models, me, name))) throw missing();
    ctx.type = 'text/plain';
    ctx.body = mcpEndpointUrl(deps.config.PUBLIC_URL, name);
  });
  return router;
}
