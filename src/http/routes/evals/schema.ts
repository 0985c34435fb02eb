import { z } from 'zod';
import { RUNNERS } from '../../../contract/constants';
import { checkSchema } from '../../../evals/checks';

/** A variant's name: it goes into its runs' names (`<eval>.<variant>.<run>`), so short and of the run-name charset. */
const variantName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$/, { error: 'expected letters, digits, "_" or "-" (starting with a letter or digit), at most 16 characters' });

/** `POST <task path>/evals` (docs/evals.md). */
export const evalBody = z
  .object({
    runs: z.union([
      z.object({ last: z.number().int().min(1).max(100).meta({ description: 'The task\'s latest closed runs (not replays), newest first' }) }).strict(),
      z.object({ names: z.array(z.string().min(1).max(64)).min(1).max(100).meta({ description: 'Closed runs of the task, by name' }) }).strict(),
    ], { error: 'expected {"last": 1..100} or {"names": [...]}' }),
    variants: z
      .array(
        z.object({
          name: variantName,
          model: z.string().min(1).max(200).optional(),
          runner: z.enum(RUNNERS).optional().meta({ description: 'Another provider (then `model` too)' }),
          prompt: z.string().optional().meta({ description: 'A prompt template used instead of the task version\'s' }),
        }).strict(),
      )
      .min(1)
      .max(8)
      .refine((vs) => new Set(vs.map((v) => v.name)).size === vs.length, { error: 'expected variants with unique names' }),
    tools: z.enum(['recorded', 'recorded_then_live'], { error: 'expected "recorded" or "recorded_then_live" (an eval never calls every tool again)' }).default('recorded'),
    checks: z.array(checkSchema).max(20).default([]),
    concurrency: z.number().int().min(1).max(16).default(4).meta({ description: 'How many of its replays may be live at once' }),
  })
  .strict();
export type EvalBody = z.infer<typeof evalBody>;

/** An eval's id in a path. */
export const evalId = z.string().regex(/^[a-z0-9]{1,16}$/, { error: 'expected an eval id' });
