/**
 * `npm run signed-urls -- <revoke|revoke-all> ...`: kills signed trigger URLs without the API.
 *   revoke --url URL                          one URL (it stops working at once)
 *   revoke-all --user U --profile P --task T  every URL of the task issued so far
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../config';
import { connectDb } from '../store/connect';
import { parseSignedUrl, revokeAllUrls, revokeUrl, signatureValid } from '../store/signed-urls';
import { findTask } from '../store/tasks';
import { loadHelperSettings } from './dev-stack-file';

const USAGE = `Usage:
  npm run signed-urls -- revoke --url URL
  npm run signed-urls -- revoke-all --user NAME --profile PROFILE --task TASK

Environment: MONGO_URL, SIGNING_SECRET (the API's). While npm run dev runs, both default to its own
(found through <DEV_DATA_DIR>/dev-stack.json).`;

async function main(argv: string[]): Promise<number> {
  let values: { url?: string; user?: string; profile?: string; task?: string; help?: boolean };
  let command: string | undefined;
  try {
    const parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { url: { type: 'string' }, user: { type: 'string' }, profile: { type: 'string' }, task: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
    values = parsed.values;
    command = parsed.positionals[0];
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) return console.log(USAGE), 0;
  if (command !== 'revoke' && command !== 'revoke-all') return console.error(`${command ? `unknown command "${command}"` : 'a command is required'}\n\n${USAGE}`), 2;
  if (command === 'revoke' && !values.url) return console.error(`revoke needs --url\n\n${USAGE}`), 2;
  if (command === 'revoke-all' && !(values.user && values.profile && values.task)) return console.error(`revoke-all needs --user, --profile and --task\n\n${USAGE}`), 2;

  let config: { MONGO_URL: string; SIGNING_SECRET: string };
  try {
    config = loadHelperSettings('signed-urls', ['MONGO_URL', 'SIGNING_SECRET']);
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : String(err));
    return 2;
  }
  const db = await connectDb(config.MONGO_URL);
  try {
    if (command === 'revoke') {
      const parts = parseSignedUrl(values.url!);
      const task = parts ? await findTask(db.models, { owner: parts.owner, profile: parts.profile, name: parts.task }) : null;
      if (!parts || !task || !signatureValid(config.SIGNING_SECRET, parts, task)) {
        console.error('not a valid signed URL of an existing task: nothing to revoke');
        return 1;
      }
      await revokeUrl(db.models, task._id, parts.id);
      console.log(`Revoked signed URL ${parts.id} of ${parts.owner}/${parts.profile}/${parts.task}.`);
    } else {
      const task = await findTask(db.models, { owner: values.user!, profile: values.profile!, name: values.task! });
      if (!task) {
        console.error(`no task ${values.user}/${values.profile}/${values.task}`);
        return 1;
      }
      await revokeAllUrls(db.models, task._id);
      console.log(`Revoked every signed URL of ${values.user}/${values.profile}/${values.task} issued so far.`);
    }
    return 0;
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`signed-urls failed: ${err.message}`);
    process.exit(1);
  },
);
