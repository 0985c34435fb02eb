import { setMaxListeners } from 'node:events';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { classify, McpTransportFailure, McpUnreachable, redactor } from './errors';
import { displayUrl } from './policy';
import { McpSession, type McpClientOptions, type McpServerRef } from './session';

/** A tool as an install stores it (what `tools/list` said, trimmed to what runs use). */
export interface McpToolDescription {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  execution?: { taskSupport?: 'forbidden' | 'optional' | 'required' };
}

export interface McpDiscovery {
  tools: McpToolDescription[];
  serverInfo: { name: string; version: string; title?: string };
  protocolVersion: string;
}

/** Pages of `tools/list` followed at most: a server whose cursor never ends is not listing tools. */
const MAX_PAGES = 1_000;
/** Tools kept at most: a model is offered far fewer (OpenAI: 128), and each is stored with its schemas. */
export const MAX_TOOLS = 5_000;
/** How long closing waits for the server to end the session (DELETE) before it just drops it. */
const CLOSE_GRACE_MS = 1_000;

/**
 * Connects to an MCP server (initialize), lists its tools (every page), and closes, all within `connectTimeoutMs`.
 * Throws McpUnreachable whose `reason` says why the server cannot be used (`guard`: the URL is refused by the network
 * guard) and whose message never holds a header value.
 */
export async function discoverTools(server: McpServerRef, options: McpClientOptions): Promise<McpDiscovery> {
  const redact = redactor(server.headers);
  const deadline = new AbortController();
  // The SDK adds a listener per request (each page) and never removes it; the signal dies with the discovery.
  setMaxListeners(MAX_PAGES + 10, deadline.signal);
  const timer = setTimeout(
    () => deadline.abort(new McpTransportFailure('timeout', true, `no complete answer within ${options.connectTimeoutMs} ms (MCP_CONNECT_TIMEOUT_MS)`)),
    options.connectTimeoutMs,
  );
  const end = Date.now() + options.connectTimeoutMs;
  const remaining = () => Math.max(1, end - Date.now());
  let session: McpSession | undefined;
  try {
    // A broken answer stream leaves the SDK's request waiting: end the discovery with the reason at once.
    session = await McpSession.open(server, options, { signal: deadline.signal, timeoutMs: remaining(), onLost: (failure) => deadline.abort(failure) });
    const tools: McpToolDescription[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= MAX_PAGES) throw new McpTransportFailure('not_mcp', true, `tools/list goes on past ${MAX_PAGES} pages`);
      const answer = await session.client.listTools(cursor === undefined ? {} : { cursor }, { signal: deadline.signal, timeout: remaining() });
      tools.push(...answer.tools.map(describeTool));
      if (tools.length > MAX_TOOLS) throw new McpTransportFailure('too_large', true, `the server lists more than ${MAX_TOOLS} tools`);
      cursor = answer.nextCursor;
      if (cursor === undefined) break;
      if (seen.has(cursor)) throw new McpTransportFailure('not_mcp', true, 'tools/list repeats a cursor');
      seen.add(cursor);
    }
    const info = session.client.getServerVersion();
    return {
      tools,
      serverInfo: { name: info?.name ?? '', version: info?.version ?? '', ...(info?.title ? { title: info.title } : {}) },
      protocolVersion: session.protocolVersion ?? '',
    };
  } catch (err) {
    const cause = deadline.signal.aborted ? deadline.signal.reason : err;
    const { reason, message } = classify(cause, { inSession: false });
    throw new McpUnreachable(reason, redact(`the MCP server at ${displayUrl(server.url)} cannot be used: ${message}`));
  } finally {
    clearTimeout(timer);
    await session?.close(CLOSE_GRACE_MS);
  }
}

function describeTool(tool: Tool): McpToolDescription {
  return {
    name: tool.name,
    ...(tool.title !== undefined ? { title: tool.title } : {}),
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    inputSchema: tool.inputSchema as Record<string, unknown>,
    ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema as Record<string, unknown> } : {}),
    ...(tool.annotations !== undefined ? { annotations: tool.annotations } : {}),
    ...(tool.execution?.taskSupport !== undefined ? { execution: { taskSupport: tool.execution.taskSupport } } : {}),
  };
}
