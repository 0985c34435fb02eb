import { z } from 'zod';
import { checkSchema } from '../../../evals/checks';
import { EVAL_STATUSES } from '../../../store/evals';
import { evalBody } from './schema';

/** An eval in a list (GET <task path>/evals): what it was asked and its status, no scores. */
export const evalSummaryView = z
  .object({
    id: z.string(),
    url: z.url(),
    status: z.enum(EVAL_STATUSES),
    reason: z.string().optional().meta({ description: 'Why it ended `error`, or who cancelled it' }),
    runs: z.number().int().meta({ description: 'How many original runs it replays (each under every variant)' }),
    variants: evalBody.shape.variants,
    tools: evalBody.shape.tools,
    checks: z.array(checkSchema),
    concurrency: z.number().int(),
    created_at: z.string(),
    modified_at: z.string(),
  })
  .meta({ id: 'EvalSummary' });


/** A variant's scorecard (src/evals/scorecard.ts VariantScore). */
export const variantScoreView = z.object({
  name: z.string(),
  runs: z.object({ done: z.number().int(), total: z.number().int() }),
  checks: z.object({ passed: z.number().int(), total: z.number().int() }),
  tokens: z.number().int().meta({ description: 'Input plus output tokens of its replays' }),
  p50_duration_ms: z.number().nullable(),
  diffs: z.array(z.object({ run: z.string(), status: z.string(), checks_passed: z.number().int(), checks_total: z.number().int(), diff_url: z.url() })),
});

/** One eval (GET <task path>/evals/:id, and the 201 of its POST): with its scorecard per variant. */
export const evalView = evalSummaryView.extend({ scorecard: z.array(variantScoreView) }).meta({ id: 'Eval' });
