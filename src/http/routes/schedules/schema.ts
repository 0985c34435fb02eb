import { z } from 'zod';
import { canonicalTimeZone, EVERY_RULE, everyMs } from '../../../temporal/task-schedules';
import { variantATrigger } from '../runs/schema';

/** At most 40 characters, so a scheduled run's name (`<schedule>-20261123T083000Z`) is a valid run name. */
export const scheduleName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, {
  error: 'expected letters, digits, "_", "-" or "." (starting with a letter or digit), at most 40 characters',
});

const settings = {
  /** Temporal's cron syntax (5 to 7 fields, or `@daily`...): Temporal judges it (task-schedules.ts maps its refusal). */
  cron: z.string().min(1).max(200).optional(),
  every: z.string().refine((v) => everyMs(v) !== undefined, { error: `expected ${EVERY_RULE}` }).optional(),
  timezone: z.string().max(100).refine((v) => canonicalTimeZone(v) !== undefined, { error: 'expected an IANA time zone name, e.g. "Europe/Paris"' }).optional(),
  paused: z.boolean().default(false),
};

/** Exactly one of `cron` and `every`; a time zone with `cron` only. */
const oneTiming = (body: { cron?: string; every?: string; timezone?: string }, ctx: z.RefinementCtx) => {
  if (body.cron !== undefined && body.every !== undefined) ctx.addIssue({ code: 'custom', path: ['every'], message: 'give either cron or every, not both' });
  if (body.cron === undefined && body.every === undefined) ctx.addIssue({ code: 'custom', path: ['cron'], message: 'required: cron or every (exactly one)' });
  if (body.every !== undefined && body.timezone !== undefined) ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'only with cron: an interval ("every") does not depend on a time zone' });
};

/** `PUT` on a Variant A path: the trigger data is `parameters`, a flat map of string to string. Unknown fields are refused. */
export const variantASchedule = z.strictObject({ ...settings, parameters: variantATrigger.shape.parameters }).superRefine(oneTiming);
/** `PUT` on a Variant B path: the trigger data is `payload`, any object. Unknown fields are refused. */
export const variantBSchedule = z.strictObject({ ...settings, payload: z.record(z.string(), z.unknown()).default({}) }).superRefine(oneTiming);
