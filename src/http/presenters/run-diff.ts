import { z } from 'zod';
import type { RunDiff } from '../../replays/diff';
import { runView } from './run';
import type { Expect, Same } from './same-type';

const side = z.object({
  name: z.string(),
  status: runView.shape.status,
  answer: z.string().nullable().meta({ description: 'The final answer; null when the run ended without one' }),
  usage: runView.shape.usage,
  duration_ms: z.number().meta({ description: 'From the run’s creation to its last change' }),
});

/** `GET <replay path>/diff` (docs/replays.md, "The diff"): src/replays/diff.ts RunDiff. */
export const runDiffView = z
  .object({
    original: side,
    replay: side,
    answer_diff: z.string().nullable().meta({ description: 'The answers’ unified diff (original first); null when they differ too much to diff in time' }),
    tool_calls: z.array(
      z.object({
        change: z.enum(['same', 'added', 'removed', 'changed']),
        tool: z.string(),
        original_arguments: z.unknown().optional(),
        replay_arguments: z.unknown().optional(),
        replayed: z.boolean().optional().meta({ description: 'The replay’s call was answered from the original’s recorded result' }),
      }),
    ),
  })
  .meta({ id: 'RunDiff' });

type _DiffViewIsTheDiffs = Expect<Same<z.infer<typeof runDiffView>, RunDiff>>;
