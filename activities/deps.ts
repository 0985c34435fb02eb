import type { Client } from '@temporalio/client';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { Db } from '../src/store/connect';
import type { Keyring } from '../src/store/secrets';
import type { ProviderFetch } from './providers/http';
import type { TemplateSandbox } from './template/sandbox';
import type { ToolCaller } from './tool-call';
import type { createMcpTaskSteps, createMcpToolCaller } from './mcp-call';
import type { FollowedRuns } from './followed-runs';

/** What the activities are built from: the worker's real clients, or the tests' pointed at local fakes. */
export interface ActivityDeps {
  config: Config;
  logger: Logger;
  db: Db;
  keyring: Keyring;
  /** For the reconciler: Temporal's visibility and the histories of closed runs. */
  temporal: Client;
  /** Runs one tool of a profile's install in its sandbox (tool-call.ts over servlets/). */
  callTool: ToolCaller;
  /** Runs one tool of a profile's MCP install on its server (mcp-call.ts over src/mcp/). */
  callMcpTool: ReturnType<typeof createMcpToolCaller>;
  /** The steps of an MCP tool the server runs as a task (mcp-call.ts over src/mcp/tasks.ts). */
  mcpTasks: ReturnType<typeof createMcpTaskSteps>;
  /** The pooled, kept-alive connections provider calls go through (providers/http.ts). */
  providerFetch: ProviderFetch;
  /** Expands prompt templates in worker threads a time limit can stop. */
  templates: TemplateSandbox;
  /** The runs someone follows (followed-runs.ts): only their model calls write the text so far. Absent: none. */
  followed?: FollowedRuns;
}
