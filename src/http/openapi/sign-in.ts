import { z } from 'zod';
import { consoleSettingsView, SIGN_IN_LINK_INVALID, signInBody, signInLinkBody, signInLinkView } from '../routes/sign-in/schema';
import { errors } from './common';
import type { Operation } from './operation';

/** Signing in to the console with a one-time link, signing out, and the console's settings (docs/console.md). */

const CROSS_SITE = ['`cross_site_request`: sent with the cookie from another site (a foreign `Origin`, or `Sec-Fetch-Site: cross-site`)', 'cross_site_request', 'origin: https://elsewhere.example is not this API\'s (http://127.0.0.1:8080); a request from another site is refused (docs/console.md)'] as [string, string, string];

export function signInOperations(): Operation[] {
  const tags = ['console'];
  return [
    {
      method: 'post',
      path: '/api/sign-in',
      summary: 'Exchange a one-time sign-in link for a session in the cookie',
      description:
        'The token is what follows `#token=` in a link from `npm run session -- create`, `npm run dev`, `ptr console` or `POST /api/sign-in-links`; it works once, within 10 minutes. The answer sets `sessionId=<id>; Path=/; HttpOnly; SameSite=Lax` (and `Secure` when PUBLIC_URL is https).',
      tags,
      session: false,
      body: {
        schema: signInBody,
        description: 'Unknown fields are refused',
        examples: { link: { summary: 'The token of a link', value: { token: 'Q2hvb3NlIGEgcmFuZG9tIDMyLWJ5dGUgdG9rZW4gaGVyZQ' } } },
      },
      responses: {
        204: {
          description: 'Signed in: a new session in the cookie',
          headers: z.object({ 'Set-Cookie': z.string().meta({ description: '`sessionId=<id>; Path=/; HttpOnly; SameSite=Lax`' }) }),
        },
        ...errors({
          400: ['A missing or malformed `token`', 'invalid_request', 'token: required'],
          401: ['`sign_in_link_invalid`: the token is unknown, used or expired', 'sign_in_link_invalid', SIGN_IN_LINK_INVALID],
          403: CROSS_SITE,
          503: '`mongodb_unavailable`: the database did not answer in time; `Retry-After: 1`',
        }),
      },
    },
    {
      method: 'post',
      path: '/api/sign-in-links',
      summary: 'A one-time sign-in link for your own user (what `ptr console` prints)',
      tags,
      session: true,
      body: { schema: signInLinkBody, required: false, description: 'No fields', examples: { empty: { summary: 'Nothing to say', value: {} } } },
      responses: {
        201: {
          description: 'The link, shown in this answer only; only a hash of its token is stored',
          schema: signInLinkView,
          examples: { link: { summary: 'A link', value: { url: 'http://127.0.0.1:8080/console#token=Q2hvb3NlIGEgcmFuZG9tIDMyLWJ5dGUgdG9rZW4gaGVyZQ', expires_at: '2026-06-01T10:10:00.123Z' } } },
        },
        ...errors({
          400: ['A field in the body', 'invalid_request', 'body: unknown field "user"'],
          403: ['`session_required` (an access token), or `cross_site_request` (the cookie, from another site)', 'session_required', 'this route needs a session'],
        }),
      },
    },
    {
      method: 'post',
      path: '/api/sign-out',
      summary: 'Revoke the session presented and clear the cookie',
      description: 'Other API processes may accept the session for up to `SESSION_CACHE_MS` more.',
      tags,
      session: true,
      responses: {
        204: {
          description: 'Signed out',
          headers: z.object({ 'Set-Cookie': z.string().meta({ description: '`sessionId=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; …`' }) }),
        },
        ...errors({ 403: ['`session_required` (an access token), or `cross_site_request` (the cookie, from another site)', 'cross_site_request', CROSS_SITE[2]] }),
      },
    },
    {
      method: 'get',
      path: '/api/console/settings',
      summary: 'Who is signed in, and where the Temporal Web UI is',
      tags,
      session: true,
      responses: {
        200: {
          description: 'The console’s settings',
          schema: consoleSettingsView,
          examples: { dev: { summary: 'Under npm run dev', value: { username: 'dev', temporal_ui_url: 'http://127.0.0.1:8233', temporal_namespace: 'default' } } },
        },
      },
    },
  ];
}
