import type { components, paths } from './schema';

/** The API's own types, by the names its OpenAPI document gives them. */
export type Task = components['schemas']['Task'];
export type Token = components['schemas']['Token'];
export type CreatedToken = components['schemas']['CreatedToken'];
export type Schedule = components['schemas']['ScheduleB'];

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type Run = Json<paths['/api/runs/{user}/{profile}/{task}/{run}']['get']['responses'][200]>;
export type Profile = Json<paths['/api/profiles/{user}']['get']['responses'][200]>[number];
export type Install = Json<paths['/api/profiles/{user}/{profile}/installations']['get']['responses'][200]>['installs'][number];
export type Delivery = Json<paths['/api/tasks/{user}/{profile}/{task}/webhook/deliveries']['get']['responses'][200]>['deliveries'][number];
export type RunStatus = Run['status'];

/** A run entry as the SSE stream and reads give it (docs/runs.md, "The run object"). */
export interface Entry {
  msg?: string;
  time?: number;
  level?: number;
  error?: string;
  exchange?: { role: string; content: unknown };
  /** A replay's tool result taken from its original's recorded result (docs/replays.md). */
  replayed?: true;
  lastMessage?: { role: string; content: unknown };
  approval?: { id: string; tool: string; arguments: unknown };
  input?: { id: string; tool: string; message: string; schema?: JsonSchema; url?: string };
}

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
  default?: unknown;
}

export const LIVE: readonly string[] = ['pending', 'running'];
