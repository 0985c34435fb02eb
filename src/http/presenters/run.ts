import { z } from 'zod';
import { NO_USAGE } from '../../contract/constants';
import type { ResultEntry, RunStatus, RunUsage } from '../../contract/types';
import type { Expect, Same } from './same-type';
import { timestamp } from './timestamp';

const message = z.object({ role: z.string(), content: z.string() });

/** A result entry as clients get it (src/contract/types.ts `ResultEntry`: contents resolved to text). */
export const runEntry = z
  .union([
    z.object({ msg: z.string(), time: z.number().meta({ description: 'Milliseconds since the epoch' }), level: z.number().int().meta({ description: 'pino: 30 info, 40 warn' }) }).meta({ title: 'Log' }),
    z.object({ msg: z.string(), exchange: message }).meta({ title: 'Message' }),
    z.object({ msg: z.string(), lastMessage: message, error: z.string().optional().meta({ description: 'An `error` run’s reason' }) }).meta({ title: 'Last' }),
    z
      .object({ msg: z.string(), approval: z.object({ id: z.string(), tool: z.string(), arguments: z.record(z.string(), z.unknown()) }) })
      .meta({ title: 'Approval', description: 'A tool call waiting for a person’s decision' }),
    z
      .object({
        msg: z.string(),
        input: z.object({
          id: z.string(),
          tool: z.string(),
          message: z.string(),
          schema: z.record(z.string(), z.unknown()).optional().meta({ description: 'What the answer’s `content` must fit (a form question)' }),
          url: z.string().optional().meta({ description: 'Where the person answers (a URL question)' }),
        }),
      })
      .meta({ title: 'Input', description: 'A question an MCP server asks a person during a tool call (docs/mcp.md, “Inputs”)' }),
  ])
  .meta({ id: 'RunEntry' });

/** The run object of the contract (the OpenAPI document's `Run`). */
export const runView = z
  .object({
    name: z.string(),
    status: z.enum(['pending', 'running', 'ready', 'error']),
    results: z.array(runEntry),
    created_at: timestamp,
    modified_at: timestamp,
    /** Tokens as the providers reported them, model and tool calls (an addition to the contract's run object). */
    usage: z.object({
      input_tokens: z.number().int().nonnegative(),
      output_tokens: z.number().int().nonnegative(),
      model_calls: z.number().int().nonnegative(),
      tool_calls: z.number().int().nonnegative(),
    }),
  })
  .meta({ id: 'Run' });
export type RunView = z.infer<typeof runView>;

// The workflow declares the entries, statuses and usage (its bundle cannot hold zod schemas): the view says the same.
type _RunViewIsTheWorkflows = [
  Expect<Same<RunView['results'][number], ResultEntry>>,
  Expect<Same<RunView['status'], RunStatus>>,
  Expect<Same<RunView['usage'], RunUsage>>,
];

/**
 * The run object of the contract, from a live query or from the record: one shape either way. `usage` is zero for
 * runs recorded before it was counted.
 */
export function presentRun(run: { name: string; status: string; results: ResultEntry[]; createdAt: Date | number; modifiedAt: Date | number; usage?: RunUsage | null }): RunView {
  return {
    name: run.name,
    status: run.status as RunStatus,
    results: run.results,
    created_at: new Date(run.createdAt).toISOString(),
    modified_at: new Date(run.modifiedAt).toISOString(),
    usage: { ...NO_USAGE, ...run.usage },
  };
}
