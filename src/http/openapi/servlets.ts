import { z } from 'zod';
import { installView } from '../presenters/installation';
import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, pageQuery } from '../presenters/page';
import { servletSearchResult, servletView } from '../presenters/servlet';
import { mcpInstallView } from '../presenters/mcp-installation';
import { installBody, installKind, installParams, mcpInstallBody, profileParams } from '../routes/installations/schema';
import { publishJsonBody, publishQuery, searchQuery, servletParams } from '../routes/servlets/schema';
import { errors, linkHeader, pathParams, user } from './common';
import type { Operation } from './operation';

/** The servlet library, a profile's installations and module downloads (docs/servlets.md). */

const ADDRESS = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
const greeterMeta = { description: 'Greets people', schema: { tools: [{ name: 'greet', description: 'Greets someone by name', inputSchema: { type: 'object' } }] } };
const servletExample = {
  slug: 'alice/greeter',
  meta: greeterMeta,
  installation_count: 2,
  visibility: 'public',
  created_at: '2026-06-01T10:00:00.123Z',
  modified_at: '2026-06-01T10:05:00.456Z',
  name: 'greeter',
  content_address: ADDRESS,
};
const { name: _name, content_address: _address, ...searchExample } = servletExample;
const installExample = {
  name: 'hello',
  settings: { config: { greeting: 'Howdy' }, permissions: { network: { domains: ['api.example.com'] }, filesystem: { volumes: {} } } },
  binding: { id: '6650c0ffee0000000000beef', contentAddress: ADDRESS },
  servlet: { slug: 'alice/greeter', has_client: false, meta: greeterMeta },
  created_at: '2026-06-01T10:00:00.123Z',
  modified_at: '2026-06-01T10:00:00.123Z',
};

const mcpInstallExample = {
  name: 'ev',
  settings: { approval: 'destructive', sampling: false },
  binding: { id: '6650c0ffee0000000000cafe', contentAddress: null },
  servlet: { slug: 'alice/ev', has_client: false, meta: { description: 'MCP server mcp-servers/everything 2.0.0 at https://mcp.example.com/mcp', remote: { url: 'https://mcp.example.com/mcp' } } },
  mcp: {
    url: 'https://mcp.example.com/mcp',
    headers: ['Authorization'],
    tools: [
      {
        name: 'echo',
        description: 'Echoes back the input string',
        inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
        annotations: { readOnlyHint: true },
        execution: { taskSupport: 'forbidden' },
      },
    ],
    server: { name: 'mcp-servers/everything', version: '2.0.0' },
    protocol_version: '2025-11-25',
    listed_at: '2026-06-01T10:00:00.123Z',
  },
  created_at: '2026-06-01T10:00:00.123Z',
  modified_at: '2026-06-01T10:00:00.123Z',
};

export function servletOperations(): Operation[] {
  const tags = ['servlets'];
  const servletPath = pathParams(servletParams.shape);
  const one = { description: 'The servlet', schema: servletView, examples: { greeter: { summary: 'A servlet', value: servletExample } } };
  const installs = '/api/profiles/{user}/{profile}/installations';
  const profilePath = pathParams(profileParams.shape);
  // Without `limit` or `cursor` the list is whole (the Python client reads one answer); with either, pages as the others.
  const page = pageQuery(LIST_DEFAULT_LIMIT);
  const installsQuery = page.extend({
    limit: page.shape.limit.unwrap().optional().meta({ description: `Items per page, 1 to ${LIST_MAX_LIMIT}; without it the whole list (${LIST_DEFAULT_LIMIT} items after a \`cursor\`)` }),
  });
  return [
    {
      method: 'get',
      path: '/api/servlets',
      summary: 'Search servlets: public ones of every user and your own',
      tags,
      session: true,
      params: { query: searchQuery.extend(pageQuery(LIST_DEFAULT_LIMIT).shape).meta({ description: '`q` matches names, descriptions and tool names, ignoring case' }) },
      responses: {
        200: { description: 'Oldest first', schema: z.array(servletSearchResult), headers: linkHeader, examples: { one: { summary: 'One result', value: [searchExample] } } },
        ...errors({ 400: 'A bad `q`, `limit` or `cursor`' }),
      },
    },
    {
      method: 'get',
      path: '/api/servlets/{user}',
      summary: 'Own servlets, public and private',
      tags,
      session: true,
      params: { path: z.object({ user }), query: pageQuery(LIST_DEFAULT_LIMIT) },
      responses: { 200: { description: 'Oldest first', schema: z.array(servletView), headers: linkHeader }, ...errors({ 400: 'A bad `limit` or `cursor`', 404: 'Another user' }) },
    },
    {
      method: 'get',
      path: '/api/servlets/{user}/{servlet}',
      summary: 'Read a servlet (another user’s only when public)',
      tags,
      session: true,
      params: { path: servletPath },
      responses: { 200: one, ...errors({ 400: 'A bad servlet name', 404: 'No such servlet, or another user’s private one' }) },
    },
    {
      method: 'put',
      path: '/api/servlets/{user}/{servlet}',
      summary: 'Publish a servlet (a WebAssembly module)',
      description:
        'The module as raw bytes (`application/wasm` or `application/octet-stream`, with `?description=&visibility=`) or as JSON with the module in base64. At most MODULE_LIMIT_BYTES of module.',
      tags,
      session: true,
      params: { path: servletPath, query: publishQuery },
      body: {
        schema: publishJsonBody,
        examples: { json: { summary: 'The JSON form', value: { module: 'AGFzbQEAAAA=', description: 'Greets people', visibility: 'public' } } },
        alternatives: {
          'application/wasm': { schema: { type: 'string', contentMediaType: 'application/wasm' } },
          'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
        },
      },
      responses: {
        200: { ...one, description: 'Replaced' },
        201: { ...one, description: 'Created' },
        ...errors({
          400: ['`invalid_module` (why the module was refused) or a bad field', 'invalid_module', 'module: module does not export "call" (a servlet exports describe and call)'],
          404: 'Another user',
          413: 'A module over MODULE_LIMIT_BYTES',
          415: 'Another content type, or a compressed body',
        }),
      },
    },
    {
      method: 'delete',
      path: '/api/servlets/{user}/{servlet}',
      summary: 'Delete a servlet and every install of it',
      tags,
      session: true,
      params: { path: servletPath },
      responses: { 204: { description: 'Deleted' }, ...errors({ 400: 'A bad servlet name', 404: 'No such servlet' }) },
    },
    {
      method: 'get',
      path: installs,
      summary: 'A profile’s installations, with their configuration',
      description: 'The whole list unless `limit` or `cursor` is given. `If-None-Match` or `If-Modified-Since` may get a 304.',
      tags: ['installations'],
      session: true,
      params: { path: profilePath, query: installsQuery },
      responses: {
        200: {
          description: 'The installs',
          schema: z.object({ installs: z.array(installView) }),
          headers: z.object({ ETag: z.string(), 'Last-Modified': z.string(), Link: z.string().optional() }),
          examples: {
            one: { summary: 'One install', value: { installs: [installExample] } },
            mcp: { summary: 'A servlet install and an MCP install', value: { installs: [mcpInstallExample, installExample] } },
          },
        },
        304: { description: 'Not modified' },
        ...errors({ 400: 'A bad name, `limit` or `cursor`', 404: 'No such profile' }),
      },
    },
    {
      method: 'post',
      path: installs,
      summary: 'Install a servlet or an MCP server into a profile (create or replace)',
      description:
        'A servlet by `servlet_slug`, or, in its place, an MCP server by `mcp` (docs/mcp.md): its URL passes the network guard (MCP_ALLOWLIST), then its tools are listed within MCP_CONNECT_TIMEOUT_MS and stored.',
      tags: ['installations'],
      session: true,
      params: { path: profilePath },
      body: {
        schema: z.union([installBody, mcpInstallBody]),
        check: (value) => (installKind(value) === 'mcp' ? mcpInstallBody.parse(value) : installBody.parse(value)),
        examples: {
          hello: {
            summary: 'With configuration and hosts',
            value: { servlet_slug: 'alice/greeter', name: 'hello', settings: { config: { greeting: 'Howdy' }, network: { domains: ['api.example.com'] } }, allow_update: true },
          },
          approval: { summary: 'Every call waits for approval', value: { servlet_slug: '~/greeter', settings: { approval: '*' } } },
          mcp: {
            summary: 'An MCP server, with a header',
            value: { name: 'ev', mcp: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer <token>' } }, settings: { tools: ['echo', 'get-sum'], approval: 'destructive' } },
          },
        },
      },
      responses: {
        200: { description: 'Replaced', schema: installView, examples: { hello: { summary: 'The install', value: installExample } } },
        201: { description: 'Created', schema: installView, examples: { hello: { summary: 'The install', value: installExample }, mcp: { summary: 'An MCP install', value: mcpInstallExample } } },
        ...errors({
          400: [
            'A bad field (named); `approval` or `tools` naming a tool the servlet or server does not have; both `servlet_slug` and `mcp`, or neither; a URL the network guard refuses (naming `mcp.url`); `mcp_unreachable`: the MCP server cannot be used, and why',
            'mcp_unreachable',
            'mcp.url: the MCP server at https://mcp.example.com/mcp cannot be used: the server answered 401 Unauthorized: check the headers (a token?)',
          ],
          404: 'No such profile, or a servlet that is not yours nor public',
          409: ['`install_exists` (with `"allow_update": false`)', 'install_exists', 'install "hello" already exists in profile "default"'],
        }),
      },
    },
    {
      method: 'post',
      path: `${installs}/{name}/refresh`,
      summary: 'List an MCP install’s tools again',
      description:
        'Its settings stay as they are: a tool they name that the server no longer lists is not offered to runs (`settings.tools`) or makes every tool of the install wait for approval (`settings.approval`).',
      tags: ['installations'],
      session: true,
      params: { path: pathParams(installParams.shape) },
      responses: {
        200: { description: 'The install, its tools as listed now', schema: mcpInstallView, examples: { mcp: { summary: 'An MCP install', value: mcpInstallExample } } },
        ...errors({
          400: ['`not_mcp_install`: a servlet install; `mcp_unreachable`: the server cannot be used now, and why; a URL the network guard now refuses', 'not_mcp_install', 'name: install "hello" is a servlet install; only MCP installs list their tools again'],
          404: 'No such install',
        }),
      },
    },
    {
      method: 'delete',
      path: `${installs}/{name}`,
      summary: 'Uninstall',
      tags: ['installations'],
      session: true,
      params: { path: pathParams(installParams.shape) },
      responses: { 204: { description: 'Uninstalled' }, ...errors({ 400: 'A bad name', 404: 'No such install' }) },
    },
    {
      method: 'get',
      path: '/api/c/{address}',
      summary: 'A module’s bytes, by content address',
      description: 'For the owner of a servlet with that content or of a profile that installs one. Immutable: a strong ETag.',
      tags: ['content'],
      session: true,
      params: { path: z.object({ address: z.string().regex(/^[0-9a-f]{64}$/).meta({ description: 'SHA-256 (hex) of the module', example: ADDRESS }) }) },
      responses: {
        200: { description: 'The module', type: 'application/wasm', headers: z.object({ ETag: z.string() }) },
        304: { description: 'Not modified' },
        ...errors({ 404: 'No such module, or not one you may read' }),
      },
    },
  ];
}
