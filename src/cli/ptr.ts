/**
 * `ptr`: the prompt task runner's command line (docs/cli.md). It speaks HTTP to the API with a session, both found
 * in MCP_RUN_ORIGIN / MCP_RUN_SESSION_ID (the hosted Python client's variables) or the config file (the API also
 * through a running `npm run dev`); only `ptr session create` works on the database directly, as `npm run session`
 * does.
 * Exit codes: 0 done (a followed run ended `ready`), 1 an API error, an unreachable API or a run ended in `error`,
 * 2 a usage error.
 */
import { Command, CommanderError } from 'commander';
import { accountCommands } from './ptr/account';
import { approvalCommands } from './ptr/approvals';
import { consoleCommands } from './ptr/console';
import { createContext, type Sink } from './ptr/context';
import { EXIT, Failure, UsageError } from './ptr/errors';
import { profileCommands } from './ptr/profiles';
import { runCommands } from './ptr/runs';
import { scheduleCommands } from './ptr/schedules';
import { evalCommands } from './ptr/evals';
import { installCommands } from './ptr/installs';
import { servletCommands } from './ptr/servlets';
import { signedCommands } from './ptr/signed';
import type { CliEnv } from './ptr/settings';
import { taskCommands } from './ptr/tasks';
import { tokenCommands } from './ptr/tokens';
import { webhookCommands } from './ptr/webhooks';

export interface CliIo {
  env: CliEnv;
  stdout: Sink;
  stderr: Sink;
}

/** Runs one command line (without `node ptr`); resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const program = new Command('ptr')
    .description('Command line of the prompt task runner: profiles, tasks, servlets, runs, schedules, evals, webhooks, signed URLs and access tokens over its HTTP API.')
    .option('--json', 'machine-readable output: one JSON document (following a run: one JSON object per line)')
    .option('--origin <url>', "the API's address (default: MCP_RUN_ORIGIN, the config file, a running `npm run dev`'s API, else http://127.0.0.1:8080)")
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();
  const ctx = createContext({ env: io.env, stdout: io.stdout, stderr: io.stderr, flags: () => program.opts<{ json?: boolean; origin?: string }>() });
  profileCommands(program, ctx);
  taskCommands(program, ctx);
  servletCommands(program, ctx);
  installCommands(program, ctx);
  runCommands(program, ctx);
  scheduleCommands(program, ctx);
  evalCommands(program, ctx);
  webhookCommands(program, ctx);
  signedCommands(program, ctx);
  approvalCommands(program, ctx);
  accountCommands(program, ctx);
  tokenCommands(program, ctx);
  consoleCommands(program, ctx);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander printed its message (or the help) already
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\n(add --help for usage)\n`);
      return EXIT.usage;
    }
    if (err instanceof Failure) {
      io.stderr.write(`error ${err.code}: ${err.message}\n`);
      return EXIT.failed;
    }
    io.stderr.write(`error internal: ${(err as Error)?.stack ?? String(err)}\n`);
    return EXIT.failed;
  }
}

/** Runs the process's command line and exits with its code. */
export function main(): void {
  // The CLI's own variables (settings.ts); the service's configuration stays with src/config.ts.
  // eslint-disable-next-line no-restricted-properties
  const env = process.env;
  // `npm run ptr` runs in the checkout; the user's files are where they typed it (npm's INIT_CWD).
  if (env.npm_lifecycle_event === 'ptr' && env.INIT_CWD) process.chdir(env.INIT_CWD);
  void runCli(process.argv.slice(2), { env, stdout: process.stdout, stderr: process.stderr }).then((code) => {
    // Exit once what was written has gone out (stdout may be a pipe), without waiting on kept-alive sockets.
    process.stdout.write('', () => process.exit(code));
  });
}

if (require.main === module) main();
