import { z } from 'zod';
import { NO_USAGE } from '../../contract/constants';
import type { ReplayOverrides, ResultEntry, RunStatus, RunUsage } from '../../contract/types';
import type { Expect, Same } from './same-type';
import { timestamp } from './timestamp';

const message = z.object({ role: z.string(), content: z.string() });

/** A result entry as clients get it (src/contract/types.ts `ResultEntry`: contents resolved to text). */
export const runEntry = z
  .union([
    z.object({ msg: z.string(), time: z.number().meta({ description: 'Milliseconds since the epoch' }), level: z.number().int().meta({ description: 'pino: 30 info, 40 warn' }) }).meta({ title: 'Log' }),
    z
      .object({ msg: z.string(), exchange: message, replayed: z.literal(true).optional().meta({ description: 'A replay’s tool result taken from its original’s recorded result (docs/replays.md)' }) })
      .meta({ title: 'Message' }),
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

/** What a replay changes of its original (src/contract/types.ts ReplayOverrides). */
export const replayOverrides = z.object({
  runner: z.string().optional(),
  model: z.string().optional(),
  prompt: z.string().optional(),
  task_version: z.number().int().optional(),
});

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
    replay_of: z.string().optional().meta({ description: 'A replay (docs/replays.md): the name of the run it replays. Absent on other runs' }),
    overrides: replayOverrides.optional().meta({ description: 'A replay: what it changes of its original (absent fields: the original’s)' }),
    eval: z.string().optional().meta({ description: 'A replay made by an eval: the eval’s id' }),
    queue: z
      .object({
        backlog_estimate: z.number().int().min(0).meta({ description: 'Tasks waiting in the run\'s task queue (workflow and activity tasks of every run there): Temporal\'s estimate' }),
        as_of: z.string().meta({ description: 'When Temporal gave it (ISO 8601)' }),
      })
      .optional()
      .meta({ description: 'Only on a live run read with `?include=queue` (docs/runs.md)' }),
    trace_id: z
      .string()
      .optional()
      .meta({ description: 'The OpenTelemetry trace of the run (32 hex digits), when the service traced its trigger (docs/observability.md). Absent otherwise' }),
  })
  .meta({ id: 'Run' });
export type RunView = z.infer<typeof runView>;

// The workflow declares the entries, statuses and usage (its bundle cannot hold zod schemas): the view says the same.
type _RunViewIsTheWorkflows = [
  Expect<Same<RunView['results'][number], ResultEntry>>,
  Expect<Same<RunView['status'], RunStatus>>,
  Expect<Same<RunView['usage'], RunUsage>>,
  Expect<Same<NonNullable<RunView['overrides']>, ReplayOverrides>>,
];

/** A record's replay fields, as the presenter takes them (store/runs.ts ReplayFields). */
export type ReplayHead = { replay?: { of: string; overrides?: StoredOverrides | null } | null; eval?: string | null; trace_id?: string | null };
type StoredOverrides = { [K in keyof ReplayOverrides]?: ReplayOverrides[K] | null };

/**
 * The run object of the contract, from a live query or from the record: one shape either way. `usage` is zero for
 * runs recorded before it was counted.
 */
export function presentRun(
  run: { name: string; status: string; results: ResultEntry[]; createdAt: Date | number; modifiedAt: Date | number; usage?: RunUsage | null } & ReplayHead,
): RunView {
  return {
    name: run.name,
    status: run.status as RunStatus,
    results: run.results,
    created_at: new Date(run.createdAt).toISOString(),
    modified_at: new Date(run.modifiedAt).toISOString(),
    usage: { ...NO_USAGE, ...run.usage },
    // A replay's fields only on replays: every other run's object is as it always was.
    ...(run.replay ? { replay_of: run.replay.of, overrides: definedOverrides(run.replay.overrides ?? {}) } : {}),
    ...(run.eval ? { eval: run.eval } : {}),
    // Only on runs whose trigger was traced: every other run's object is as it always was.
    ...(run.trace_id ? { trace_id: run.trace_id } : {}),
  };
}

/** The overrides as given (a stored document may hold nulls for fields not given). */
const definedOverrides = (o: StoredOverrides): ReplayOverrides =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as ReplayOverrides;
