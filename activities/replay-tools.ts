import type { Models } from '../src/store/models';
import type { CallToolResult, RunRef, Text, ToolOutcome } from '../src/contract/types';
import { loadText } from '../src/store/run-content';
import { callKey, canonicalKey, findRecordedResult } from '../src/store/replay-tools';

/** A replay's tool call, asked of its recorded results (docs/replays.md, "Matching"). */
export interface RecordedToolInput {
  run: RunRef;
  tool: string;
  /** The arguments as the model gave them (their JSON, or a reference to it). */
  arguments: Text;
  /** How many recorded results of each call key the run has used so far (the workflow's count). */
  used: Record<string, number>;
}

/**
 * The replay's recorded results, looked up for the workflow (workflows/run-steps.ts `callTool`): the call's key
 * (`callKey`), and the next unused recorded result of it as the tool's outcome, stored as a tool call's would be.
 */
export function createReplayToolActivities(parts: { models: Models; outcome: (run: RunRef, result: CallToolResult) => Promise<ToolOutcome> }) {
  const { models, outcome } = parts;
  return {
    /** Local activity: `{ key }` alone when no recorded result is left for the call. */
    async recordedToolResult(input: RecordedToolInput): Promise<{ key: string; outcome?: ToolOutcome }> {
      const key = callKey(input.tool, canonicalKey(await loadText(models, input.arguments)));
      const result = await findRecordedResult(models, input.run.id, key, input.used[key] ?? 0);
      return result ? { key, outcome: await outcome(input.run, result) } : { key };
    },
  };
}
