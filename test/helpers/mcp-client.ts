import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { atTeardown, getStack } from './stack';

/** `/mcp/<profile>` (`/mcp` for default) of an API. */
export const mcpUrl = (profile = 'default', base = getStack().apiUrl) => `${base}/mcp${profile === 'default' ? '' : `/${profile}`}`;

/**
 * The SDK's own client over Streamable HTTP, pointed at the service as a user would: the URL and a static
 * `Authorization` header. Declares elicitation (approvals reach it so). Closed at teardown if the test does not.
 */
export async function mcpClient(token: string, options: { profile?: string; base?: string; url?: string } = {}) {
  const client = new Client({ name: 'ptr-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  const transport = new StreamableHTTPClientTransport(new URL(options.url ?? mcpUrl(options.profile, options.base)), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  atTeardown(() => client.close().catch(() => undefined));
  return client;
}
