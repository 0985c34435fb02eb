import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { Db } from '../src/store/connect';
import type { Keyring } from '../src/store/secrets';

export interface ActivityDeps {
  config: Config;
  logger: Logger;
  db: Db;
  keyring: Keyring;
}

/** Every activity, built from real dependencies (the worker's, or the tests' pointed at local fakes). */
export function createActivities(deps: ActivityDeps) {
  void deps;
  return {
    async echo(input: { text: string }): Promise<string> {
      return input.text;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
