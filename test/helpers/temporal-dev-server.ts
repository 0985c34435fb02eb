import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { devServerDynamicConfigFlags } from '../../src/temporal/dev-server-config';

/** How often a dev server that missed the SDK's startup limit is started again. */
const START_ATTEMPTS = 3;

/**
 * The Temporal CLI's dev server at `cli` on 127.0.0.1 with our search attributes and dynamic config, as the tests and
 * the bench run it. The SDK gives the server 5 s to answer (a fixed limit): on a busy machine it once took longer and
 * the whole suite failed in its first hook, so a server that misses it is started again, on a new port (and a new
 * database file, `dbFile(attempt)`, when it keeps one), START_ATTEMPTS times at most. `log` says each retry.
 */
export async function startTemporalDevServer(options: {
  cli: string;
  extraArgs?: string[];
  dbFile?: (attempt: number) => string;
  log: (line: string) => void;
}): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'existing-path', path: options.cli },
          ip: '127.0.0.1',
          dbFilename: options.dbFile?.(attempt),
          searchAttributes: SEARCH_ATTRIBUTES,
          extraArgs: [...devServerDynamicConfigFlags(), ...(options.extraArgs ?? [])],
        },
      });
    } catch (err) {
      if (attempt >= START_ATTEMPTS || !missedStartup(err)) throw err;
      options.log(`the Temporal dev server did not start in time (attempt ${attempt} of ${START_ATTEMPTS}); starting it again`);
    }
  }
}

/** The SDK's error for a dev server that did not answer within its startup limit (sdk-core's ephemeral server). */
const missedStartup = (err: unknown) => /did not start within/.test(String((err as Error)?.message));
