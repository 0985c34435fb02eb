import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './errors';

/** The variables `ptr` reads; the first two are the hosted service's Python client's own. */
export interface CliEnv {
  MCP_RUN_ORIGIN?: string;
  MCP_RUN_SESSION_ID?: string;
  /** The Python client's older name for the session. */
  MCPX_SESSION_ID?: string;
  /** Another config file than `$XDG_CONFIG_HOME/ptr/config.json`. */
  PTR_CONFIG?: string;
  XDG_CONFIG_HOME?: string;
  /** Where `npm run dev` keeps its data, and the file naming its running stack (`.data` in the checkout by default). */
  DEV_DATA_DIR?: string;
  /** Where `npm run dev` registers its stacks (`$XDG_CACHE_HOME/prompt-task-runner/stacks`). */
  XDG_CACHE_HOME?: string;
  HOME?: string;
  /** Any other variable, read by name: `ptr install mcp --header-env Authorization=MY_VAR`. */
  readonly [variable: string]: string | undefined;
}

/** What the config file holds. Unknown keys are kept as they are. */
export interface StoredConfig {
  origin?: string;
  session?: string;
  [key: string]: unknown;
}

export type Source = 'flag' | 'env' | 'config' | 'dev-stack' | 'default';

export interface Settings {
  origin: string;
  session?: string;
  configPath: string;
  from: { origin: Source; session?: Source };
  /** Why the origin is a dev stack's or the default (`ptr` says so on stderr): nothing configured one. */
  originWhy?: string;
}

/** Where `npm run dev` serves the API by default: the origin when nothing says otherwise and no dev stack runs. */
export const DEFAULT_ORIGIN = 'http://127.0.0.1:8080';

export function configPath(env: CliEnv): string {
  if (env.PTR_CONFIG) return path.resolve(env.PTR_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'ptr', 'config.json');
}

/** The config file's contents; `{}` when there is none. Throws UsageError when it is not a JSON object. */
export function readConfigFile(file: string): StoredConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file}: not JSON (${(err as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${file}: expected a JSON object`);
  return value as StoredConfig;
}

/**
 * Merges `patch` into the config file (an `undefined` value removes the key). The file holds a session, a
 * credential: it is written readable by its owner only (0600, in a 0700 directory), whole or not at all.
 */
export function updateConfigFile(file: string, patch: Partial<StoredConfig>): StoredConfig {
  const next: StoredConfig = { ...readConfigFile(file) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) delete next[key];
    else next[key] = value;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temp, file);
  return next;
}

/** `http(s)://host[:port][/prefix]` without a trailing slash. Throws UsageError naming `what` otherwise. */
export function normalizeOrigin(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${what}: expected a URL such as ${DEFAULT_ORIGIN}, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${what}: expected an http or https URL, got "${value}"`);
  if (url.search || url.hash) throw new UsageError(`${what}: expected no query or fragment in "${value}"`);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * Where the API is and which session to send, first found wins: `--origin`; the environment (`MCP_RUN_ORIGIN`,
 * `MCP_RUN_SESSION_ID`, as the Python client reads them); the config file; for the origin, the API of the dev stack
 * `npm run dev` is running (src/cli/dev-stack-file.ts), else its default address.
 */
export function resolveSettings(env: CliEnv, flags: { origin?: string }): Settings {
  const file = configPath(env);
  const stored = readConfigFile(file);
  const session = env.MCP_RUN_SESSION_ID || env.MCPX_SESSION_ID;
  const [origin, originFrom, originWhy]: [string, Source, string?] = flags.origin
    ? [normalizeOrigin(flags.origin, '--origin'), 'flag']
    : env.MCP_RUN_ORIGIN
      ? [normalizeOrigin(env.MCP_RUN_ORIGIN, 'MCP_RUN_ORIGIN'), 'env']
      : typeof stored.origin === 'string'
        ? [normalizeOrigin(stored.origin, `origin in ${file}`), 'config']
        : defaultOrigin(env);
  const [sessionId, sessionFrom]: [string | undefined, Source | undefined] = session
    ? [session, 'env']
    : typeof stored.session === 'string' && stored.session
      ? [stored.session, 'config']
      : [undefined, undefined];
  return { origin, session: sessionId, configPath: file, from: { origin: originFrom, session: sessionFrom }, originWhy };
}

/** A dev stack's API, else the default; with why. Throws UsageError when several dev stacks run (it will not guess). */
function defaultOrigin(env: CliEnv): [string, Source, string] {
  // Required here: reading the dev stack file loads zod, a tenth of a second that configured commands need not pay.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { findDevStack, AmbiguousDevStack } = require('../dev-stack-file') as typeof import('../dev-stack-file');
  let found: ReturnType<typeof findDevStack>;
  try {
    found = findDevStack(env);
  } catch (err) {
    if (err instanceof AmbiguousDevStack) throw new UsageError(`no origin configured, and ${err.message}\nor give --origin URL (or MCP_RUN_ORIGIN, or \`ptr config set-origin URL\`)`);
    throw err;
  }
  const { stack, file, why } = found;
  if (stack) return [normalizeOrigin(stack.apiUrl, `apiUrl in ${file}`), 'dev-stack', `the dev stack of ${file} (${why}); no origin configured`];
  return [DEFAULT_ORIGIN, 'default', `the default: no origin configured (--origin, MCP_RUN_ORIGIN, ptr config set-origin) and ${why}`];
}
