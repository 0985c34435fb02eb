/**
 * The client command for `@modelcontextprotocol/conformance` client scenarios: drives our MCP client (src/mcp: the
 * guarded transport, the OAuth client credentials, the worker's session pool) against the scenario's server.
 *
 *   npx @modelcontextprotocol/conformance client --command 'npx tsx scripts/mcp-conformance-client.ts' --scenario sse-retry
 *
 * Scenarios it takes: `initialize`, `tools_call`, `sse-retry`, `auth/client-credentials-basic` and
 * `auth/client-credentials-jwt` (test/mcp/conformance.test.ts). The framework passes the server's URL as the last
 * argument, the scenario in MCP_CONFORMANCE_SCENARIO and, for auth scenarios, the credentials in
 * MCP_CONFORMANCE_CONTEXT (`{ client_id, client_secret }` or `{ client_id, private_key_pem }`). It connects and lists
 * the tools as an install does (discover.ts), then calls `add_numbers` with 5 and 3 (`tools_call`) or else the first
 * tool that takes no required argument (`sse-retry`: `test_reconnection`) through the worker's session pool, as a
 * run's call would; exits 1 on a failure. The scenario's servers run on loopback: MCP_ALLOWLIST is loopback here.
 */
import { discoverTools } from '../src/mcp/discover';
import type { McpOAuthClient } from '../src/mcp/oauth';
import { mcpClientOptions } from '../src/mcp/options';
import { createMcpSessionPool } from '../src/mcp/pool';

async function main(): Promise<void> {
  const url = process.argv.at(-1);
  if (!url || !URL.canParse(url)) throw new Error('usage: mcp-conformance-client.ts <server url>');
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}') as { client_id?: string; client_secret?: string; private_key_pem?: string };
  const oauth: McpOAuthClient | undefined = context.client_id
    ? { clientId: context.client_id, ...(context.client_secret ? { clientSecret: context.client_secret } : {}), ...(context.private_key_pem ? { privateKey: context.private_key_pem } : {}) }
    : undefined;
  const options = mcpClientOptions({
    NETWORK_BLOCKLIST: [],
    MCP_ALLOWLIST: ['localhost', '127.0.0.1', '::1'],
    MCP_CONNECT_TIMEOUT_MS: 10_000,
    MCP_CALL_TIMEOUT_MS: 30_000,
    MCP_MAX_RESPONSE_BYTES: 4 * 1024 * 1024,
  });
  const server = { url, ...(oauth ? { oauth } : {}) };
  const listing = await discoverTools(server, options);
  console.log(`${scenario}: ${listing.tools.length} tools: ${listing.tools.map((t) => t.name).join(', ')}`);
  const pool = createMcpSessionPool(options);
  try {
    const tool =
      listing.tools.find((t) => t.name === 'add_numbers') ??
      listing.tools.find((t) => !((t.inputSchema as { required?: unknown[] }).required ?? []).length);
    if (tool) {
      const args = tool.name === 'add_numbers' ? { a: 5, b: 3 } : {};
      const result = await pool.callTool({ key: 'conformance', ...server }, { name: tool.name, arguments: args });
      console.log(`${tool.name}: ${JSON.stringify(result.content).slice(0, 500)}`);
    }
  } finally {
    await pool.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
