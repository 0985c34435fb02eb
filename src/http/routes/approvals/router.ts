import Router from '@koa/router';
import { pendingApprovals } from '../../../store/approvals';
import type { AppDeps, AuthState } from '../../deps';
import { requireProfile } from '../../token-auth';
import { parse } from '../../validate';
import { runUrlB } from '../runs/router';
import { ownerFromPath } from '../users/owner';
import { approvalsQuery, type ApprovalsView } from './schema';

/** `GET /api/approvals/:user`: what waits for the user across their runs, tool calls to decide and MCP servers' questions (docs/runs.md). */
export function approvalsRouter(deps: AppDeps): Router<AuthState> {
  const router = new Router<AuthState>();
  router.get('/approvals/:user', async (ctx) => {
    const owner = ownerFromPath(ctx, ctx.params.user, `user "${ctx.params.user}"`);
    const only = parse(approvalsQuery, { profile: ctx.query.profile, task: ctx.query.task }, 'query');
    const token = ctx.state.token;
    // An access token limited to some profiles: theirs only, and no other by `?profile=`.
    if (token && only.profile !== undefined) requireProfile(token, only.profile);
    const pending = await pendingApprovals(deps.db.models, owner, { ...only, profiles: token?.profiles });
    const body: ApprovalsView = {
      approvals: pending.map((a) => {
        const run_url = runUrlB(deps.config.PUBLIC_URL, a.run.owner, a.run.profile, a.run.task, a.run.run);
        const asked_at = a.asked_at.toISOString();
        if (a.kind === 'input') {
          return { run_url, kind: a.kind, id: a.id, tool: a.tool, message: a.message, ...(a.schema ? { schema: a.schema } : {}), ...(a.url ? { url: a.url } : {}), asked_at };
        }
        return { run_url, kind: a.kind, id: a.id, tool: a.tool, arguments: a.arguments, asked_at };
      }),
    };
    ctx.body = body;
  });
  return router;
}
