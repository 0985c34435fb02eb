import type { TokenScope } from '../store/tokens';

/**
 * Where an access token's profile is, on a route that takes tokens:
 * - `path`: the path's `:profile` (Variant A's run paths take only `default`, and 404 on any other);
 * - `default`: Variant A's task paths, whose profile is `default` in the path itself;
 * - `filtered`: a list across profiles (`GET /api/tasks/~`, `GET /api/approvals/~`), which answers only the
 *   token's profiles (and refuses a `?profile=` outside them).
 */
export type ProfileSource = 'path' | 'default' | 'filtered';

export interface TokenRoute {
  scope: TokenScope;
  profile: ProfileSource;
}

const A_TASK = '/api/profiles/:user/default/tasks';
const A_RUNS = '/api/profiles/:user/:profile/tasks/:task/runs';
const A_SCHEDULES = '/api/profiles/:user/:profile/tasks/:task/schedules';
const B_TASKS = '/api/tasks/:user';
const B_RUNS = '/api/runs/:user/:profile/:task';
const B_SCHEDULES = '/api/tasks/:user/:profile/:task/schedules';
const A_EVALS = '/api/profiles/:user/:profile/tasks/:task/evals';
const B_EVALS = '/api/tasks/:user/:profile/:task/evals';

const route = (scope: TokenScope, profile: ProfileSource = 'path'): TokenRoute => ({ scope, profile });

/**
 * The routes an access token may call (`<METHOD> <pattern as registered>`), with the scope each needs; every other
 * route of the API needs a session (403 `session_required`). docs/tokens.md lists the same; the token test holds
 * this table to the routers (each pattern is a registered route).
 * Left to sessions on purpose: writing or deleting tasks, schedules and webhooks, signed URLs (a credential a token
 * must not mint), tokens themselves, profiles, installs, servlets, module content and the user record.
 */
export const TOKEN_ROUTES: ReadonlyMap<string, TokenRoute> = new Map([
  [`GET ${A_TASK}`, route('tasks:read', 'default')],
  [`GET ${A_TASK}/:task`, route('tasks:read', 'default')],
  [`GET ${B_TASKS}`, route('tasks:read', 'filtered')],
  [`GET ${B_TASKS}/:profile`, route('tasks:read')],
  [`GET ${B_TASKS}/:profile/:task`, route('tasks:read')],
  [`GET ${A_SCHEDULES}`, route('tasks:read')],
  [`GET ${A_SCHEDULES}/:schedule`, route('tasks:read')],
  [`GET ${B_SCHEDULES}`, route('tasks:read')],
  [`GET ${B_SCHEDULES}/:schedule`, route('tasks:read')],

  [`PUT ${A_RUNS}/:run`, route('runs:trigger')],
  [`POST ${A_SCHEDULES}/:schedule/trigger`, route('runs:trigger')],
  [`POST ${B_SCHEDULES}/:schedule/trigger`, route('runs:trigger')],
  [`POST ${A_RUNS}/:run/replays`, route('runs:trigger')],
  [`POST ${B_RUNS}/:run/replays`, route('runs:trigger')],
  [`POST ${A_EVALS}`, route('runs:trigger')],
  [`POST ${B_EVALS}`, route('runs:trigger')],

  [`GET ${A_RUNS}`, route('runs:read')],
  [`GET ${A_RUNS}/:run`, route('runs:read')],
  [`GET ${A_RUNS}/:run/events`, route('runs:read')],
  [`GET ${B_RUNS}`, route('runs:read')],
  [`GET ${B_RUNS}/:run`, route('runs:read')],
  [`GET ${B_RUNS}/:run/events`, route('runs:read')],
  [`GET ${A_RUNS}/:run/diff`, route('runs:read')],
  [`GET ${B_RUNS}/:run/diff`, route('runs:read')],
  [`GET ${A_EVALS}`, route('runs:read')],
  [`GET ${A_EVALS}/:id`, route('runs:read')],
  [`GET ${B_EVALS}`, route('runs:read')],
  [`GET ${B_EVALS}/:id`, route('runs:read')],
  ['GET /api/approvals/:user', route('runs:read', 'filtered')],

  [`DELETE ${A_RUNS}/:run`, route('runs:control')],
  [`POST ${A_RUNS}/:run/cancel`, route('runs:control')],
  [`POST ${A_RUNS}/:run/approvals/:approval`, route('runs:control')],
  [`POST ${A_RUNS}/:run/inputs/:input`, route('runs:control')],
  [`DELETE ${B_RUNS}/:run`, route('runs:control')],
  [`POST ${B_RUNS}/:run/cancel`, route('runs:control')],
  [`POST ${B_RUNS}/:run/approvals/:approval`, route('runs:control')],
  [`POST ${B_RUNS}/:run/inputs/:input`, route('runs:control')],
  [`POST ${A_EVALS}/:id/cancel`, route('runs:control')],
  [`DELETE ${A_EVALS}/:id`, route('runs:control')],
  [`POST ${B_EVALS}/:id/cancel`, route('runs:control')],
  [`DELETE ${B_EVALS}/:id`, route('runs:control')],
]);

/** The route of TOKEN_ROUTES an OpenAPI operation (`/api/tasks/{user}`) describes, if any. */
export const tokenRouteOf = (method: string, openApiPath: string) => TOKEN_ROUTES.get(`${method.toUpperCase()} ${openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1')}`);
