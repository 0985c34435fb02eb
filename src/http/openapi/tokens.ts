import { z } from 'zod';
import { createdTokenView, createTokenBody, tokenParams, tokenView } from '../routes/tokens/schema';
import { errors, pathParams, user } from './common';
import type { Operation } from './operation';

/** Access tokens (docs/tokens.md): made, listed and revoked with a session only. */

const created = {
  name: 'claude-desktop',
  token: 'ptr_3q2-7wAAn1XyJgZ0hLr8VhTb2kGkQ1n0cFJmWc4sD9E',
  profiles: ['work'],
  scopes: ['tasks:read', 'runs:trigger', 'runs:read'],
  created_at: '2026-06-01T10:00:00.123Z',
  expires_at: '2026-08-30T10:00:00.123Z',
};

const { token: _shownOnce, ...listed } = created;

export function tokenOperations(): Operation[] {
  const tags = ['access tokens'];
  const path = z.object({ user });
  return [
    {
      method: 'post',
      path: '/api/tokens/{user}',
      summary: 'Make an access token (shown in this answer only)',
      tags,
      session: true,
      params: { path },
      body: {
        schema: createTokenBody,
        description: 'Unknown fields are refused',
        examples: {
          all: { summary: 'Every profile and scope, 90 days', value: { name: 'laptop' } },
          limited: { summary: 'One profile, no control of runs, 30 days', value: { name: 'claude-desktop', profiles: ['work'], scopes: ['tasks:read', 'runs:trigger', 'runs:read'], expires_in_days: 30 } },
        },
      },
      responses: {
        201: { description: 'Made; `token` is not shown again', schema: createdTokenView, examples: { limited: { summary: 'The token', value: created } } },
        ...errors({
          400: ['A bad field: an unknown scope, a malformed or missing profile, days out of 1..365', 'invalid_request', 'scopes.1: expected one of tasks:read, runs:trigger, runs:read, runs:control'],
          403: ['`session_required`: asked with an access token (a token cannot make tokens)', 'session_required', 'this route needs a session'],
          404: 'Another user',
          409: ['`token_exists`: the name is in use', 'token_exists', 'name: a token named "laptop" already exists (revoke it first)'],
        }),
      },
    },
    {
      method: 'get',
      path: '/api/tokens/{user}',
      summary: 'The user’s access tokens (without the tokens), oldest first',
      tags,
      session: true,
      params: { path },
      responses: {
        200: {
          description: 'Expired tokens included',
          schema: z.array(tokenView),
          examples: { one: { summary: 'One token', value: [{ ...listed, last_used_at: '2026-06-02T08:15:00.000Z' }] } },
        },
        ...errors({ 403: ['`session_required`', 'session_required', 'this route needs a session'], 404: 'Another user' }),
      },
    },
    {
      method: 'delete',
      path: '/api/tokens/{user}/{name}',
      summary: 'Revoke an access token',
      description: 'It stops working within `SESSION_CACHE_MS` on every API process.',
      tags,
      session: true,
      params: { path: pathParams(tokenParams.shape) },
      responses: {
        204: { description: 'Revoked' },
        ...errors({ 400: 'A malformed name', 403: ['`session_required`', 'session_required', 'this route needs a session'], 404: 'No token by that name' }),
      },
    },
  ];
}
