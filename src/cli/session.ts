/**
 * `npm run session -- <create|list|revoke> --user NAME [...]`: the session helper. Creates the user (and its
 * `default` profile) when needed. Only a hash of each session id is stored, so an id is shown once, at creation.
 */
import { parseArgs } from 'node:util';
import { ConfigError, publicUrlOf } from '../config';
import { connectDb } from '../store/connect';
import { NAME_PATTERN, NAME_RULE } from '../store/names';
import { createSession, listSessions, revokeSessions } from '../store/sessions';
import { createSignInLink, signInUrl } from '../store/sign-in-links';
import { loadHelperSettings } from './dev-stack-file';
import { runCommand } from './run-command';

const USAGE = `Usage:
  npm run session -- create --user NAME              create a session (and the user if new); prints "Session: <id>"
                                                     and "Sign in:  <link>", a one-time link to the console
  npm run session -- list --user NAME                list the user's sessions by hint (the id's last 6 characters)
  npm run session -- revoke --user NAME --id=HINT    revoke one session (its hint as listed, or its full id; with
                                                     "=", since a hint may start with "-")
  npm run session -- revoke --user NAME --all        revoke every session of the user

Send the id as a cookie: Cookie: sessionId=<id>. Sessions expire after SESSION_TTL_HOURS. The sign-in link opens the
console signed in as the user (a new session); it works once, within 10 minutes.
Environment: MONGO_URL (required), SESSION_TTL_HOURS (default 720), PUBLIC_URL (the links' base; default
http://<HOST>:<PORT>). While npm run dev runs, MONGO_URL and PUBLIC_URL default to its database and API (found through
<DEV_DATA_DIR>/dev-stack.json).`;

class UsageError extends Error {}

type Command = { command: 'help' } | { command: 'create' | 'list' | 'revoke'; user: string; id?: string; all: boolean };

function parseCommand(argv: string[]): Command {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { user: { type: 'string' }, id: { type: 'string' }, all: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return { command: 'help' };
  const [command, ...extra] = positionals;
  const user = values.user;
  if (command !== 'create' && command !== 'list' && command !== 'revoke') {
    throw new UsageError(command ? `unknown command "${command}"` : 'a command is required');
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  if (!user) throw new UsageError('--user NAME is required');
  if (!NAME_PATTERN.test(user)) throw new UsageError(`--user: expected ${NAME_RULE}`);
  if (command === 'revoke' && Boolean(values.id) === Boolean(values.all)) throw new UsageError('revoke takes either --id HINT or --all');
  if (command !== 'revoke' && (values.id || values.all)) throw new UsageError(`--id and --all belong to revoke, not ${command}`);
  return { command, user, id: values.id, all: Boolean(values.all) };
}

async function main(argv: string[]): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseCommand(argv);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (cmd.command === 'help') {
    console.log(USAGE);
    return 0;
  }
  let config: { MONGO_URL: string; SESSION_TTL_HOURS: number; PUBLIC_URL?: string; HOST: string; PORT: number };
  try {
    config = loadHelperSettings('session', ['MONGO_URL', 'SESSION_TTL_HOURS', 'PUBLIC_URL', 'HOST', 'PORT']);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    return 2;
  }
  const db = await connectDb(config.MONGO_URL);
  try {
    const { models } = db;
    if (cmd.command === 'create') {
      const { id, expires_at } = await createSession(models, cmd.user, config.SESSION_TTL_HOURS);
      console.log(`Session: ${id}`);
      console.log(`Expires: ${expires_at.toISOString()}`);
      console.log(`Cookie:  sessionId=${id}`);
      const link = await createSignInLink(models, cmd.user);
      console.log(`Sign in:  ${signInUrl(publicUrlOf(config), link.token)}`);
    } else if (cmd.command === 'list') {
      const now = Date.now();
      const sessions = await listSessions(models, cmd.user);
      if (sessions.length === 0) console.log(`no sessions for ${cmd.user}`);
      for (const s of sessions) {
        const state = s.revoked_at ? 'revoked' : s.expires_at.getTime() <= now ? 'expired' : 'active';
        console.log(`${s.hint}  ${state.padEnd(7)}  created ${s.created_at.toISOString()}  expires ${s.expires_at.toISOString()}`);
      }
    } else {
      let revoked: number;
      if (cmd.id?.includes('/')) {
        // A full id: revoke exactly that session, not every session sharing its hint.
        revoked = await revokeSessions(models, cmd.user, { id: cmd.id });
      } else {
        revoked = await revokeSessions(models, cmd.user, cmd.all ? { all: true } : { hint: cmd.id ?? '' });
      }
      console.log(`Revoked ${revoked} session${revoked === 1 ? '' : 's'} of ${cmd.user}.`);
      if (revoked === 0 && !cmd.all) return 1;
    }
    return 0;
  } finally {
    await db.close();
  }
}

if (require.main === module) runCommand('session', () => main(process.argv.slice(2)));
