/**
 * `npm run users -- <set-weight|show> NAME [WEIGHT]`: an operator's settings of a user. Exit codes: 0 done, 1 no such
 * user, 2 a usage error (a bad weight included) or a missing setting.
 */
import { ConfigError } from '../config';
import { connectDb } from '../store/connect';
import { NAME_PATTERN, NAME_RULE } from '../store/names';
import { FAIRNESS_WEIGHT, parseFairnessWeight, readFairnessWeight, writeFairnessWeight } from '../store/user-weights';
import { loadHelperSettings } from './dev-stack-file';
import { runCommand } from './run-command';

const USAGE = `Usage:
  npm run users -- set-weight NAME WEIGHT   set the user's fairness weight: ${FAIRNESS_WEIGHT.min} to ${FAIRNESS_WEIGHT.max} (default ${FAIRNESS_WEIGHT.default})
  npm run users -- show NAME                print the user's settings

The weight is the user's share of the task queue beside other users' when the service is busy: a user of weight 3
gets three times the dispatches of a user of weight 1 while both have runs waiting. Runs started after the change
take it (within TRIGGER_CACHE_MS of it in a running API or worker). See docs/fairness.md.
Environment: MONGO_URL (required). While npm run dev runs, it defaults to its database (found through
<DEV_DATA_DIR>/dev-stack.json).`;

class UsageError extends Error {}

type Command = { command: 'help' } | { command: 'show'; user: string } | { command: 'set-weight'; user: string; weight: number };

/** Positionals only, read by hand: a weight of `-1` is a bad weight to report, not an option. */
export function parseUsersCommand(argv: readonly string[]): Command {
  if (argv.some((a) => a === '--help' || a === '-h') || argv[0] === 'help') return { command: 'help' };
  const [command, user, ...rest] = argv;
  if (command !== 'set-weight' && command !== 'show') throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  if (!user) throw new UsageError(`${command}: the user's NAME is required`);
  if (!NAME_PATTERN.test(user)) throw new UsageError(`NAME: expected ${NAME_RULE}, got "${user}"`);
  if (command === 'show') {
    if (rest.length > 0) throw new UsageError(`show: unexpected argument "${rest[0]}"`);
    return { command, user };
  }
  const [text, ...extra] = rest;
  if (text === undefined) throw new UsageError('set-weight: WEIGHT is required');
  if (extra.length > 0) throw new UsageError(`set-weight: unexpected argument "${extra[0]}"`);
  const parsed = parseFairnessWeight(text);
  if ('problem' in parsed) throw new UsageError(`WEIGHT: ${parsed.problem}`);
  return { command, user, weight: parsed.weight };
}

async function main(argv: string[]): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseUsersCommand(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`users: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (cmd.command === 'help') {
    console.log(USAGE);
    return 0;
  }
  let config: { MONGO_URL: string };
  try {
    config = loadHelperSettings('users', ['MONGO_URL']);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    return 2;
  }
  const db = await connectDb(config.MONGO_URL);
  try {
    const { models } = db;
    const exists = await models.User.exists({ username: cmd.user });
    if (!exists) {
      console.error(`users: no user "${cmd.user}" (users are created with npm run session -- create --user ${cmd.user})`);
      return 1;
    }
    if (cmd.command === 'set-weight') {
      const before = await readFairnessWeight(models, cmd.user);
      if (!(await writeFairnessWeight(models, cmd.user, cmd.weight))) {
        console.error(`users: the user "${cmd.user}" was deleted meanwhile`);
        return 1;
      }
      console.log(`${cmd.user}: fairness weight ${cmd.weight} (was ${before}). Runs started from now on take it (a running API or worker within TRIGGER_CACHE_MS).`);
    } else {
      console.log(`user: ${cmd.user}`);
      console.log(`fairness weight: ${await readFairnessWeight(models, cmd.user)}`);
    }
    return 0;
  } finally {
    await db.close();
  }
}

if (require.main === module) runCommand('users', () => main(process.argv.slice(2)));
