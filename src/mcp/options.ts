import type { Config } from '../config';
import { createPinnedAgent } from '../net/pinned-agent';
import { mcpNetworkPolicy } from './policy';
import type { McpClientOptions } from './session';

/**
 * The options every MCP connection of a process shares, from the configuration: the MCP network policy and one pinned
 * agent (connections pooled per origin, every new one checked). Throws when NETWORK_BLOCKLIST or MCP_ALLOWLIST has an
 * entry it cannot read.
 */
export function mcpClientOptions(
  config: Pick<Config, 'NETWORK_BLOCKLIST' | 'MCP_ALLOWLIST' | 'MCP_CONNECT_TIMEOUT_MS' | 'MCP_CALL_TIMEOUT_MS' | 'MCP_MAX_RESPONSE_BYTES'>,
): McpClientOptions {
  const policy = mcpNetworkPolicy(config);
  return {
    policy,
    dispatcher: createPinnedAgent(policy, { connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS }),
    connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    callTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
    maxResponseBytes: config.MCP_MAX_RESPONSE_BYTES,
  };
}
