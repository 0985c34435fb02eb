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
 * decision, `POST <run_url>/approvals/<id>`) or `input` (an MCP server's question, `POST <run_url>/inputs/<id>`);
 * other kinds may join them, so clients skip a kind they do not know.
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

/** An MCP server's question during a tool call (docs/mcp.md, "Inputs"). */
export const pendingInputView = z
  .object({
    run_url: z.url().meta({ description: 'The run’s URL (Variant B)' }),
    kind: z.literal('input'),
    id: z.string().meta({ description: 'The input’s id, as the run’s entry shows it' }),
    tool: z.string().meta({ description: 'The tool whose server asks (`<install>__<tool>`)' }),
    message: z.string().meta({ description: 'The server’s question' }),
    schema: z.record(z.string(), z.unknown()).optional().meta({ description: 'What an `accept`’s `content` must fit (a form question)' }),
    url: z.string().optional().meta({ description: 'Where the person answers (a URL question)' }),
    asked_at: timestamp.meta({ description: 'When the run asked (its last change)' }),
  })
  .meta({ id: 'PendingInput' });

export const approvalsView = z.object({ approvals: z.array(z.union([pendingView, pendingInputView])) });
export type ApprovalsView = z.infer<typeof approvalsView>;
