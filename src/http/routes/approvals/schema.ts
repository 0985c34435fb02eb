import { z } from 'zod';
import { nameSchema } from '../../../store/names';
import { timestamp } from '../../presenters/timestamp';

/** `GET /api/approvals/~?profile=&task=`: both optional; `task` alone matches that name in every profile. */
export const approvalsQuery = z.object({
  profile: nameSchema.optional().meta({ description: 'Only this profile’s runs' }),
  task: nameSchema.optional().meta({ description: 'Only runs of tasks of this name' }),
});

/**
 * One thing a person must answer for a run to go on. `kind` says which: `approval` (a tool call waiting for a
 * decision, `POST <run_url>/approvals/<id>`); other kinds may join it, so clients skip a kind they do not know.
 */
export const pendingView = z
  .object({
    run_url: z.url().meta({ description: 'The run’s URL (Variant B)' }),
    kind: z.literal('approval'),
    id: z.string().meta({ description: 'The approval’s id, as the run’s entry shows it' }),
    tool: z.string().meta({ description: 'The tool the model called (`<install>__<tool>`)' }),
    arguments: z.record(z.string(), z.unknown()).meta({ description: 'The arguments the model gave' }),
    asked_at: timestamp.meta({ description: 'When the run asked (its last change)' }),
  })
  .meta({ id: 'PendingApproval' });

export const approvalsView = z.object({ approvals: z.array(pendingView) });
export type ApprovalsView = z.infer<typeof approvalsView>;
