/**
 * The MCP client: what the API (install, refresh) and the worker (tool calls) use. Streamable HTTP only, through the
 * network guard (src/net/), every answer capped. docs/mcp.md says what users see of it.
 */
export { discoverTools, MAX_TOOLS, type McpDiscovery, type McpToolDescription } from './discover';
export { McpCallFailed, McpUnreachable, type McpFailureReason } from './errors';
export { mcpClientOptions } from './options';
export { checkMcpUrl, displayUrl, mcpNetworkPolicy } from './policy';
export { createMcpSessionPool, type McpCallOptions, type McpCallTarget, type McpSessionPool, type McpToolCall } from './pool';
export { toCallToolResult } from './results';
export type { McpClientOptions, McpServerRef } from './session';
