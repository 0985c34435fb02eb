import { z } from 'zod';
import { sseUrlBody } from '../routes/mcp/schema';
import { errors } from './common';
import type { Operation } from './operation';

/** The MCP endpoint's URL for the Python client (docs/mcp.md, "Your tasks as MCP tools"). */
export function mcpOperations(): Operation[] {
  return [
    {
      method: 'post',
      path: '/api/mcp/sse/url',
      summary: 'The URL of a profile\'s MCP endpoint',
      description:
        'What the Python client\'s `Client.mcp_sse()` asks for. The answer is the URL of `/mcp/<profile>` as text: MCP over Streamable HTTP, taking `Authorization: Bearer <token>` (no credential is put in the URL). `activeProfile` is `<user>/<profile>`, `~/<profile>` or `<profile>` (default `~/default`).',
      tags: ['mcp'],
      session: true,
      body: { schema: sseUrlBody, examples: { python: { summary: 'As the Python client sends it', value: { version: 'v0', activeProfile: '~/default', expiresIn: 31449600 } } } },
      responses: {
        200: { description: 'The endpoint\'s URL', type: 'text/plain', schema: z.string() },
        ...errors({ 400: 'A body that is not the shape above', 404: 'No such profile of the session\'s user (the message says so)' }),
      },
    },
  ];
}
