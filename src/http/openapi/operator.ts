import { z } from 'zod';
import { codecBody } from '../routes/codec/schema';
import { errors } from './common';
import { ASSET_NAMES, ASSETS_PATH, DOCS_PATH, OPENAPI_PATH, ROOT_LINKS } from './docs-page';
import type { Operation } from './operation';

/** No session: health, readiness, metrics, the codec server of the Temporal Web UI, and this document. */

const payloadsExample = {
  payloads: [
    {
      metadata: { encoding: 'anNvbi9wbGFpbg==' },
      data: 'eyJyZWYiOiJydW4vYWxpY2UvZGVmYXVsdC9oYWlrdS9maXJzdCMwIiwiYnl0ZXMiOjcwMDAwLCJwYXJ0cyI6MX0=',
    },
  ],
};

function codecOperations(): Operation[] {
  const ops: Operation[] = [];
  const token = z.object({ token: z.string().meta({ description: 'CODEC_TOKEN, for clients that cannot send a header (the Web UI)' }) });
  for (const op of ['decode', 'encode'] as const) {
    for (const path of [`/codec/${op}`, `/codec/{token}/${op}`]) {
      const params = path.includes('{token}') ? { path: token } : undefined;
      ops.push(
        {
          method: 'post',
          path,
          summary: op === 'decode' ? 'Codec: put stored texts back into payloads' : 'Codec: payloads unchanged',
          description:
            'For the Temporal Web UI and `temporal --codec-endpoint` (docs/runs.md, "Seeing stored contents in the Web UI"). With CODEC_TOKEN: the token in the path or as a bearer token; without it, loopback callers only, and nobody in production.',
          tags: ['codec'],
          session: false,
          security: [{ codecToken: [] }, {}],
          params: { ...params, header: z.object({ 'X-Namespace': z.string().optional().meta({ description: 'Payloads of another namespace come back as they were' }) }) },
          body: { schema: codecBody, examples: { reference: { summary: 'A payload holding a reference', value: payloadsExample } } },
          responses: {
            200: { description: 'The payloads', schema: codecBody.meta({ description: 'The same shape as the request' }) },
            ...errors({
              400: 'A bad body',
              401: ['A wrong or missing token (with CODEC_TOKEN)', 'unauthorized', 'the codec endpoint needs CODEC_TOKEN, as "Authorization: Bearer <token>" or in the path (/codec/<token>/decode)'],
              403: ['`codec_disabled` or `origin_not_allowed`', 'codec_disabled', 'the codec endpoint is off: set CODEC_TOKEN to turn it on'],
            }),
          },
        },
        {
          method: 'options',
          path,
          summary: 'Codec: CORS preflight',
          tags: ['codec'],
          session: false,
          ...(params ? { params } : {}),
          responses: { 204: { description: 'The CORS answer for an allowed origin' }, ...errors({ 403: ['`origin_not_allowed`', 'origin_not_allowed', 'origin https://evil.example may not call the codec endpoint: add it to CODEC_CORS_ORIGINS'] }) },
        },
      );
    }
  }
  return ops;
}

export function operatorOperations(): Operation[] {
  const tags = ['operators'];
  return [
    {
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      tags,
      session: false,
      responses: { 200: { description: 'Alive', schema: z.object({ ok: z.literal(true) }), examples: { ok: { summary: 'Alive', value: { ok: true } } } } },
    },
    {
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: MongoDB and Temporal answer',
      description: 'Each dependency is asked within DEPENDENCY_TIMEOUT_MS.',
      tags,
      session: false,
      responses: {
        200: { description: 'Ready', schema: z.record(z.string(), z.string()), examples: { ready: { summary: 'Ready', value: { mongodb: 'ok', temporal: 'ok' } } } },
        503: {
          description: 'Not ready: the failing dependency’s field says why; `Retry-After: 1`',
          schema: z.record(z.string(), z.string()),
          examples: { stalled: { summary: 'Temporal stalled', value: { mongodb: 'ok', temporal: 'did not answer within 3000 ms' } } },
        },
      },
    },
    {
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics',
      tags,
      session: false,
      responses: { 200: { description: 'Prometheus text', type: 'text/plain; version=0.0.4', schema: z.string() } },
    },
    ...codecOperations(),
    {
      method: 'get',
      path: '/',
      summary: 'Where to go from here',
      description: 'Links to the documentation page, the console, this document and liveness.',
      tags: ['docs'],
      session: false,
      responses: {
        200: {
          description: 'The links',
          schema: z.object({
            service: z.literal('prompt-task-runner'),
            version: z.string(),
            docs: z.string().meta({ description: 'The API’s documentation page (Swagger UI)' }),
            console: z.string().meta({ description: 'The web console' }),
            openapi: z.string().meta({ description: 'This document' }),
            health: z.string(),
          }),
          examples: { links: { summary: 'The links', value: { service: 'prompt-task-runner', version: '0.1.0', ...ROOT_LINKS } } },
        },
      },
    },
    {
      method: 'get',
      path: OPENAPI_PATH,
      summary: 'This document (OpenAPI 3.1)',
      tags: ['docs'],
      session: false,
      responses: { 200: { description: 'The OpenAPI document', schema: z.record(z.string(), z.unknown()) } },
    },
    {
      method: 'get',
      path: DOCS_PATH,
      summary: 'The API’s documentation page (Swagger UI)',
      tags: ['docs'],
      session: false,
      responses: { 200: { description: 'The page', type: 'text/html', schema: z.string() } },
    },
    {
      method: 'get',
      path: `${ASSETS_PATH}/{file}`,
      summary: 'A file of the documentation page',
      tags: ['docs'],
      session: false,
      params: { path: z.object({ file: z.enum(ASSET_NAMES) }) },
      responses: { 200: { description: 'The file (Swagger UI’s, from the `swagger-ui-dist` package, or its start script)' }, ...errors({ 404: 'Another file' }) },
    },
  ];
}
