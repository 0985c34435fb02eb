import { createDocument, type ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../config';
import { approvalOperations } from './approvals';
import { consoleOperations } from './console';
import { mcpOperations } from './mcp';
import { withSessionErrors } from './common';
import { toZodOpenApi, type Operation } from './operation';
import { operatorOperations } from './operator';
import { runOperations } from './runs';
import { scheduleOperations } from './schedules';
import { evalOperations } from './evals';
import { servletOperations } from './servlets';
import { signInOperations } from './sign-in';
import { signedOperations } from './signed';
import { taskOperations } from './tasks';
import { tokenOperations } from './tokens';
import { userProfileOperations } from './users-profiles';

/**
 * The API's OpenAPI 3.1 document, from the same zod schemas the routes parse requests with. Every route the routers
 * register has its operation here (test/api/openapi.test.ts holds them to it, and runs every example through what
 * the route does with it). Built from the server's config: task limits and Variant A's model are its own.
 */

export function apiOperations(config: Config): Operation[] {
  return [
    ...operatorOperations(),
    ...userProfileOperations(),
    ...taskOperations(config),
    ...runOperations(),
    ...approvalOperations(),
    ...mcpOperations(),
    ...signedOperations(),
    ...scheduleOperations(),
    ...evalOperations(),
    ...servletOperations(),
    ...tokenOperations(),
    ...signInOperations(),
    ...consoleOperations(),
  ].map(withSessionErrors);
}

/** package.json's version (the OpenAPI test holds them together; importing package.json would copy it into dist/). */
export const API_VERSION = '0.1.0';

const TAGS = [
  { name: 'users and profiles', description: 'docs/users-profiles-tasks.md' },
  { name: 'tasks', description: 'Variant A: `/api/profiles/~/default/tasks/...`; Variant B: `/api/tasks/~/<profile>/...`' },
  { name: 'runs', description: 'docs/runs.md' },
  { name: 'access tokens', description: 'docs/tokens.md: `Authorization: Bearer ptr_…` on the task and run routes' },
  { name: 'signed URLs', description: 'Trigger a task without a session (docs/runs.md, "Signed URLs")' },
  { name: 'schedules', description: 'docs/schedules.md' },
  { name: 'evals', description: 'docs/evals.md: replays of a task’s runs under variants, checked and scored' },
  { name: 'webhooks', description: 'docs/webhooks.md' },
  { name: 'servlets', description: 'docs/servlets.md' },
  { name: 'installations', description: 'A profile’s installs: servlets (docs/servlets.md) and MCP servers (docs/mcp.md)' },
  { name: 'content', description: 'Module downloads' },
  { name: 'operators', description: 'Health, readiness and metrics (no session)' },
  { name: 'codec', description: 'The Temporal Web UI’s codec server' },
  { name: 'mcp', description: 'Your tasks as MCP tools at `/mcp/<profile>` (docs/mcp.md)' },
  { name: 'docs', description: 'This document and its page' },
  { name: 'console', description: 'docs/console.md: signing in with a one-time link, signing out, the console’s settings' },
];

export function buildOpenApiDocument(config: Config): Record<string, unknown> {
  const paths: ZodOpenApiPathsObject = {};
  for (const op of apiOperations(config)) {
    const item = (paths[op.path] ??= {});
    if (item[op.method]) throw new Error(`two operations for ${op.method.toUpperCase()} ${op.path}`);
    item[op.method] = toZodOpenApi(op);
  }
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Prompt task runner API',
      version: API_VERSION,
      description:
        'Mustache prompt tasks run on OpenAI or Anthropic, one Temporal workflow per run. Every `/api/...` request needs a session id (`npm run session -- create --user NAME`), as `Authorization: Bearer <id>` or `Cookie: sessionId=<id>`; `~` in a path is the session user. Errors are `{"error": {"code", "message"}}`, the message naming the field.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    tags: TAGS,
    paths,
    components: {
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'sessionId', description: 'A session id, `ptr/<user>/<random>`' },
        sessionBearer: { type: 'http', scheme: 'bearer', description: 'The same session id as a Bearer token, for clients other than browsers' },
        accessToken: { type: 'http', scheme: 'bearer', description: 'An access token, `ptr_…` (docs/tokens.md), on the operations that list it; the names are the scopes it needs' },
        codecToken: { type: 'http', scheme: 'bearer', description: 'CODEC_TOKEN' },
      },
    },
  }) as unknown as Record<string, unknown>;
}

/** An example of the document and what checks it: the route's own parsing for request bodies, the schema otherwise. */
export interface ExampleCheck {
  where: string;
  value: unknown;
  check: (value: unknown) => unknown;
}

export function exampleChecks(config: Config): ExampleCheck[] {
  const checks: ExampleCheck[] = [];
  for (const op of apiOperations(config)) {
    const at = `${op.method.toUpperCase()} ${op.path}`;
    if (op.body) {
      const check = op.body.check ?? ((value: unknown) => op.body!.schema.parse(value));
      for (const [key, example] of Object.entries(op.body.examples)) checks.push({ where: `${at} body ${key}`, value: example.value, check });
    }
    for (const [status, response] of Object.entries(op.responses)) {
      const schema = response.schema;
      if (!schema) continue;
      for (const [key, example] of Object.entries(response.examples ?? {})) checks.push({ where: `${at} ${status} ${key}`, value: example.value, check: (v) => schema.parse(v) });
    }
  }
  return checks;
}
