import { ConfigError } from '../../config';
import { loadHelperSettings } from '../dev-stack-file';
import { connectDb, isMongoUnavailable } from '../../store/connect';
import { NAME_PATTERN, NAME_RULE } from '../../store/names';
import { createSession } from '../../store/sessions';
import { Failure, UsageError } from './errors';

const DATABASE_TIMEOUT_MS = 10_000;

/** `host:port` of a MongoDB URL (never its credentials). */
const databaseHost = (url: string) => {
  const hosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]*)/.exec(url)?.[1];
  return hosts || 'MONGO_URL';
};

/**
 * Creates a session (and the user, with its `default` profile, when new) straight in the database, as `npm run
 * session -- create` does: there is no API for it. Needs MONGO_URL, from the environment or a running `npm run dev`
 * (and reads SESSION_TTL_HOURS). Also answers the API's address when it is known: PUBLIC_URL, from the environment
 * or the running `npm run dev` (its API). Throws UsageError for a bad name or a missing MONGO_URL. Loaded only by
 * `ptr session create`, so other commands never load the database driver.
 */
export async function createLocalSession(user: string): Promise<{ id: string; expires_at: Date; apiUrl?: string }> {
  if (!NAME_PATTERN.test(user)) throw new UsageError(`--user: expected ${NAME_RULE}`);
  let config: { MONGO_URL: string; SESSION_TTL_HOURS: number; PUBLIC_URL?: string };
  try {
    // Unset settings come from a running `npm run dev` (its dev-stack.json), as for the other helpers.
    config = loadHelperSettings('ptr', ['MONGO_URL', 'SESSION_TTL_HOURS', 'PUBLIC_URL']);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new UsageError(`${err.message}\n(ptr session create works on the database's machine)`);
  }
  // Bounded (a stalled database is an error within seconds, not a hang); one upsert and one insert, never a scan.
  let db: Awaited<ReturnType<typeof connectDb>> | undefined;
  try {
    db = await connectDb(config.MONGO_URL, { timeoutMs: DATABASE_TIMEOUT_MS });
    return { ...(await createSession(db.models, user, config.SESSION_TTL_HOURS)), apiUrl: config.PUBLIC_URL };
  } catch (err) {
    if (!isMongoUnavailable(err)) throw err;
    // The host and port only: the URL may carry credentials.
    throw new Failure('mongodb_unavailable', `cannot reach the database at ${databaseHost(config.MONGO_URL)}: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    await db?.close();
  }
}
