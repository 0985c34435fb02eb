import { mcpClientOptions } from '../../src/mcp/options';
import type { McpClientOptions } from '../../src/mcp/session';

/**
 * The MCP client's options as a worker builds them from its configuration, with loopback (where the test servers are)
 * let through by MCP_ALLOWLIST, as an operator would for a private server.
 */
export function testMcpOptions(overrides: Partial<Record<'MCP_ALLOWLIST' | 'NETWORK_BLOCKLIST', string[]>> & Partial<Pick<McpClientOptions, 'connectTimeoutMs' | 'callTimeoutMs' | 'maxResponseBytes'>> = {}): McpClientOptions {
  return mcpClientOptions({
    NETWORK_BLOCKLIST: overrides.NETWORK_BLOCKLIST ?? [],
    MCP_ALLOWLIST: overrides.MCP_ALLOWLIST ?? ['127.0.0.1'],
    MCP_CONNECT_TIMEOUT_MS: overrides.connectTimeoutMs ?? 10_000,
    MCP_CALL_TIMEOUT_MS: overrides.callTimeoutMs ?? 60_000,
    MCP_MAX_RESPONSE_BYTES: overrides.maxResponseBytes ?? 4 * 1024 * 1024,
  });
}
