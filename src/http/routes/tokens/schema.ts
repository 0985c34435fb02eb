import { z } from 'zod';
import { nameSchema } from '../../../store/names';
import { TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX, TOKEN_SCOPES } from '../../../store/tokens';
import { timestamp } from '../../presenters/timestamp';

export const tokenScope = z.enum(TOKEN_SCOPES, { error: `expected one of ${TOKEN_SCOPES.join(', ')}` });

/** Repeats collapse to one; the order given is kept. */
const distinct = <T>(items: T[]) => [...new Set(items)];

/** `POST /api/tokens/~`; unknown fields are refused (a misspelt `scope` must not make a token of every scope). */
export const createTokenBody = z.strictObject({
  name: nameSchema.meta({ description: 'Unique among your tokens', example: 'claude-desktop' }),
  profiles: z
    .array(nameSchema)
    .min(1)
    .nullable()
    .default(null)
    .transform((p) => (p === null ? null : distinct(p)))
    .meta({ description: 'The profiles it may act in; null or absent: every profile of yours, now and later' }),
  scopes: z
    .array(tokenScope)
    .min(1)
    .default([...TOKEN_SCOPES])
    .transform(distinct)
    .meta({ description: 'What it may do; absent: all four' }),
  expires_in_days: z.int().min(1).max(TOKEN_DAYS_MAX).default(TOKEN_DAYS_DEFAULT).meta({ description: `Days until it stops working (default ${TOKEN_DAYS_DEFAULT}, at most ${TOKEN_DAYS_MAX})` }),
});
export type CreateTokenBody = z.infer<typeof createTokenBody>;

export const tokenParams = z.object({ name: nameSchema });

/** A token as listed: never the token itself, nor its hash. */
export const tokenView = z
  .object({
    name: z.string(),
    profiles: z.array(z.string()).nullable().meta({ description: 'null: every profile of the user' }),
    scopes: z.array(tokenScope),
    created_at: timestamp,
    expires_at: timestamp,
    last_used_at: timestamp.nullable().meta({ description: 'When it was last accepted, to the minute; null: never' }),
  })
  .meta({ id: 'Token' });
export type TokenView = z.infer<typeof tokenView>;

/** The answer to a create: the token, shown this once. */
export const createdTokenView = tokenView
  .omit({ last_used_at: true })
  .extend({ token: z.string().meta({ description: '`ptr_…`: shown only in this answer; only its hash is stored' }) })
  .meta({ id: 'CreatedToken' });
export type CreatedTokenView = z.infer<typeof createdTokenView>;
