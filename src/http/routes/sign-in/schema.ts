import { z } from 'zod';
import { timestamp } from '../../presenters/timestamp';

/** `POST /api/sign-in`: the token of a one-time link (what follows `#token=`). */
export const signInBody = z.strictObject({
  token: z
    .string()
    .min(1)
    .max(256)
    .meta({ description: 'What follows `#token=` in a sign-in link', example: 'Q2hvb3NlIGEgcmFuZG9tIDMyLWJ5dGUgdG9rZW4gaGVyZQ' }),
});
export type SignInBody = z.infer<typeof signInBody>;

/** The message of 401 `sign_in_link_invalid`: never the token itself. */
export const SIGN_IN_LINK_INVALID =
  'token: this sign-in link is unknown, used or expired; get another (`npm run session -- create --user NAME`, or `ptr console`)';

/** `POST /api/sign-in-links`: no fields (a link is for the caller's own user). */
export const signInLinkBody = z.strictObject({});

/** A one-time sign-in link for the caller, shown in this answer only. */
export const signInLinkView = z
  .object({
    url: z.url().meta({ description: '`<PUBLIC_URL>/console#token=<token>`: valid once, for 10 minutes' }),
    expires_at: timestamp,
  })
  .meta({ id: 'SignInLink' });
export type SignInLinkView = z.infer<typeof signInLinkView>;

/** What the console needs to know of its user and the server. */
export const consoleSettingsView = z
  .object({
    username: z.string(),
    temporal_ui_url: z.url().nullable().meta({ description: 'TEMPORAL_UI_URL: a run\'s workflow is `<temporal_ui_url>/namespaces/<namespace>/workflows/<encodeURIComponent(workflow id)>`; null: not set' }),
    temporal_namespace: z.string().meta({ description: 'TEMPORAL_NAMESPACE', example: 'default' }),
  })
  .meta({ id: 'ConsoleSettings' });
export type ConsoleSettingsView = z.infer<typeof consoleSettingsView>;
