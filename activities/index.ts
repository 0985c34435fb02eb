import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { Db } from '../src/store/connect';
import type { Keyring } from '../src/store/secrets';
import type { CallToolResult } from '../workflows/types';
import { createRunActivities } from './run-activities';
import type { ToolCallInput } from './tool-call';

export type { ToolCallInput };

export interface ActivityDeps {
  config: Config;
  logger: Logger;
  db: Db;
  keyring: Keyring;
  /** Runs one tool of a profile's install in its sandbox (tool-call.ts over servlets/). */
  callTool: (input: ToolCallInput) => Promise<CallToolResult>;
}

/** Every activity, built from real dependencies (the worker's, or the tests' pointed at local fakes). */
export function createActivities(deps: ActivityDeps) {
  return {
    async echo(input: { text: string }): Promise<string> {
      return input.text;
    },
    ...createRunActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
