import type { ZodType } from 'zod';
import { tokenRouteOf } from '../token-routes';
import type { ZodOpenApiOperationObject, ZodOpenApiResponseObject, ZodOpenApiContentObject, ZodObjectInput } from 'zod-openapi';

/**
 * One operation of the API as the document describes it. Every route a router registers has one (the OpenAPI test
 * holds the routers to it); the document is built from these by zod-openapi (document.ts).
 */
export type Method = 'get' | 'put' | 'post' | 'delete' | 'options';

export interface Example {
  summary: string;
  value: unknown;
}

/**
 * A request body. `schema` is the zod schema the route parses the body with (or, for bodies parsed by code that
 * builds its schema per request, one that describes them); `check` is what the route itself does with a body, when
 * that is more than `schema.parse`: the OpenAPI test runs every example through it.
 */
export interface BodySpec {
  schema: ZodType;
  examples: Record<string, Example>;
  check?: (value: unknown) => unknown;
  /** `application/json` unless said. */
  type?: string;
  required?: boolean;
  description?: string;
  /** Other content types the route takes, described without zod (raw bytes). */
  alternatives?: ZodOpenApiContentObject;
}

export interface ResponseSpec {
  description: string;
  /** A JSON answer (`type` says otherwise). Absent with `type`: a body without a schema (bytes). */
  schema?: ZodType;
  type?: string;
  examples?: Record<string, Example>;
  headers?: ZodObjectInput;
}

export interface Operation {
  method: Method;
  /** In OpenAPI form: `{param}`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Needs a session (`Cookie: sessionId=<id>` or `Authorization: Bearer <id>`); otherwise `security` says what it takes (nothing by default). */
  session: boolean;
  security?: Array<Record<string, string[]>>;
  params?: { path?: ZodObjectInput; query?: ZodObjectInput; header?: ZodObjectInput };
  body?: BodySpec;
  responses: Record<string, ResponseSpec>;
}

/** `putApiTasksUserProfileTask`: unique as long as (method, path) is. */
export function operationId(op: Pick<Operation, 'method' | 'path'>): string {
  const words = op.path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return op.method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

const examplesOf = (examples: Record<string, Example> | undefined) =>
  examples && Object.keys(examples).length > 0 ? { examples: { ...examples } } : {};

function response(spec: ResponseSpec): ZodOpenApiResponseObject {
  const type = spec.type ?? 'application/json';
  const hasContent = spec.schema !== undefined || spec.type !== undefined;
  return {
    description: spec.description,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(hasContent ? { content: { [type]: { ...(spec.schema ? { schema: spec.schema } : {}), ...examplesOf(spec.examples) } } } : {}),
  };
}

/** A session, or on the routes of TOKEN_ROUTES an access token with the scope it names. */
function sessionSecurity(op: Pick<Operation, 'method' | 'path'>): Array<Record<string, string[]>> {
  const route = tokenRouteOf(op.method, op.path);
  return [{ session: [] }, { sessionBearer: [] }, ...(route ? [{ accessToken: [route.scope] }] : [])];
}

/** The operation as zod-openapi takes it. */
export function toZodOpenApi(op: Operation): ZodOpenApiOperationObject {
  const body = op.body;
  return {
    operationId: operationId(op),
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags,
    security: op.session ? sessionSecurity(op) : (op.security ?? []),
    ...(op.params ? { requestParams: op.params } : {}),
    ...(body
      ? {
          requestBody: {
            required: body.required ?? true,
            ...(body.description ? { description: body.description } : {}),
            content: { [body.type ?? 'application/json']: { schema: body.schema, ...examplesOf(body.examples) }, ...body.alternatives },
          },
        }
      : {}),
    responses: Object.fromEntries(Object.entries(op.responses).map(([status, spec]) => [status, response(spec)])),
  };
}
