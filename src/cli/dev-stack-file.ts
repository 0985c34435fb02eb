/**
 * The dev stack file, `<DEV_DATA_DIR>/dev-stack.json` (mode 0600): `npm run dev` writes it once its stack is up and
 * removes it when it stops, so that the command-line helpers, run in another terminal, find the stack by themselves.
 * It names the stack's addresses and where its secrets are (the secrets stay in secrets.json). `npm run dev` also
 * registers its stack under `$XDG_CACHE_HOME/prompt-task-runner/stacks/` (stack-registry.ts), so that a shell
 * without DEV_DATA_DIR finds a stack started with another one, and the helpers never guess between two.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, loadConfigSubset, loadDevConfig, REQUIRED_VARIABLES, type SettingName } from '../config';
import { alive, registeredStacks } from './stack-registry';

/** The checkout: `npm run dev` resolves a relative DEV_DATA_DIR against it, and so do the helpers. */
const root = path.resolve(__dirname, '../..');

export const DEV_STACK_FILE = 'dev-stack.json';

const devStackSchema = z.object({
  /** The process running src/cli/dev.ts; the stack is running while it is alive. */
  pid: z.number().int().positive(),
  apiUrl: z.string(),
  mongoUrl: z.string(),
  temporalAddress: z.string(),
  temporalNamespace: z.string(),
  /** Holds MASTER_KEY and SIGNING_SECRET (mode 0600). */
  secretsFile: z.string(),
  startedAt: z.string(),
});
export type DevStack = z.infer<typeof devStackSchema>;

const secretsSchema = z.object({ MASTER_KEY: z.string(), SIGNING_SECRET: z.string() });

/** The settings the helpers may take from a running dev stack. */
const DEV_STACK_SETTINGS = ['MONGO_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'PUBLIC_URL', 'MASTER_KEY', 'SIGNING_SECRET'] as const;
type DevStackSetting = (typeof DEV_STACK_SETTINGS)[number];

/** DEV_DATA_DIR as `npm run dev` uses it: a relative one is in the checkout, wherever the command is run from. */
export const resolveDataDir = (devDataDir: string) => path.resolve(root, devDataDir);

export const devStackPath = (dataDir: string) => path.join(dataDir, DEV_STACK_FILE);

/** Written whole or not at all (a temporary file renamed over it), so a reader never sees half of it. */
export function writeDevStack(dataDir: string, stack: DevStack): string {
  const file = devStackPath(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, `${JSON.stringify(stack, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temporary, file);
  return file;
}

/** Removes the file if process `pid` wrote it (a dev command that failed to start must not remove another's). */
export function removeDevStack(dataDir: string, pid = process.pid): void {
  if (readFile(devStackPath(dataDir))?.pid === pid) fs.rmSync(devStackPath(dataDir), { force: true });
}

/** The running dev stack of `dataDir`: undefined when there is no file, it is unreadable, or its process is gone. */
export function readDevStack(dataDir: string): DevStack | undefined {
  const stack = readFile(devStackPath(dataDir));
  return stack && alive(stack.pid) ? stack : undefined;
}

/** A running stack's settings, under the names of src/config.ts; the secrets only when secrets.json is readable. */
export function devStackSettings(stack: DevStack): Record<DevStackSetting, string | undefined> {
  let secrets: z.infer<typeof secretsSchema> | undefined;
  try {
    secrets = secretsSchema.parse(JSON.parse(fs.readFileSync(stack.secretsFile, 'utf8')));
  } catch {
    secrets = undefined;
  }
  return {
    MONGO_URL: stack.mongoUrl,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: stack.temporalNamespace,
    PUBLIC_URL: stack.apiUrl,
    MASTER_KEY: secrets?.MASTER_KEY,
    SIGNING_SECRET: secrets?.SIGNING_SECRET,
  };
}

/** Where the helpers look for a dev stack, the stack if one runs, and why that one (for their messages). */
export interface FoundDevStack {
  /** The dev stack file looked at, as shown in messages. */
  file: string;
  stack?: DevStack;
  /** Why this stack: `DEV_DATA_DIR=…`, or that it is the only one running. */
  why: string;
}

/** Two or more dev stacks run and nothing says which: the helpers refuse to guess. */
export class AmbiguousDevStack extends ConfigError {
  constructor(message: string) {
    super([message]);
    this.message = message;
  }
}

/**
 * The dev stack the helpers use: the one of DEV_DATA_DIR when it is set; otherwise the only one running among those
 * `npm run dev` registered and the checkout's default (`.data`). Throws AmbiguousDevStack, listing them with the line
 * that picks each, when several run.
 */
export function findDevStack(env: { DEV_DATA_DIR?: string; XDG_CACHE_HOME?: string; HOME?: string }): FoundDevStack {
  const defaultDir = resolveDataDir(loadDevConfig({ DEV_DATA_DIR: env.DEV_DATA_DIR || undefined }).DEV_DATA_DIR);
  if (env.DEV_DATA_DIR) return { file: shown(devStackPath(defaultDir)), stack: readDevStack(defaultDir), why: `DEV_DATA_DIR=${env.DEV_DATA_DIR}` };
  const running = new Map<string, DevStack>();
  const own = readDevStack(defaultDir);
  if (own) running.set(defaultDir, own);
  for (const { dataDir, stack: entry } of registeredStacks(env)) {
    const stack = running.has(dataDir) ? undefined : readDevStack(dataDir);
    if (stack?.pid === entry.pid) running.set(dataDir, stack);
  }
  if (running.size > 1) {
    const lines = [...running].map(([dir, stack]) => `  export DEV_DATA_DIR=${dir}   # API ${stack.apiUrl}, npm run dev as process ${stack.pid}`);
    throw new AmbiguousDevStack(`${running.size} dev stacks are running; say which (or set the addresses yourself):\n${lines.join('\n')}`);
  }
  const [only] = running;
  if (!only) return { file: shown(devStackPath(defaultDir)), why: 'no dev stack running' };
  return { file: shown(devStackPath(only[0])), stack: only[1], why: 'the only dev stack running' };
}

/**
 * The named settings of a command-line helper (`helper` names it in messages): from the environment, and those it
 * leaves unset (or empty) from the dev stack `npm run dev` is running, saying so in one line on stderr. The
 * environment always wins, and the two are never mixed: when a set variable differs from the dev stack's own
 * (another database, another master key), nothing is taken from the dev stack. Throws ConfigError; when a required
 * setting the dev stack could give is missing, its message says to set it or to start `npm run dev`.
 */
export function loadHelperSettings<K extends SettingName>(
  helper: string,
  names: readonly K[],
  // The helpers' settings are parsed by src/config.ts; only which are set is read here, to put the dev stack's under them.
  // eslint-disable-next-line no-restricted-properties
  env: Record<string, string | undefined> = process.env,
): ReturnType<typeof loadConfigSubset<K>> {
  const isSet = (name: K) => Boolean(env[name]?.trim());
  const { file, stack, why } = names.every(isSet) ? { file: '', why: '' } : findDevStack(env);
  const offered: Partial<Record<string, string>> = stack ? devStackSettings(stack) : {};
  const differing = names.filter((name) => isSet(name) && offered[name] !== undefined && offered[name] !== env[name]);
  const taken = differing.length > 0 ? [] : names.filter((name) => !isSet(name) && offered[name] !== undefined);
  let config: ReturnType<typeof loadConfigSubset<K>>;
  try {
    // Each named setting as set, else as the dev stack gives it, else unset (an empty one too).
    config = loadConfigSubset(names, { ...env, ...Object.fromEntries(names.map((name) => [name, isSet(name) ? env[name] : taken.includes(name) ? offered[name] : undefined])) });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // Required settings the dev stack could have given, neither set nor taken from it.
    const missing = names.filter(
      (name) => !isSet(name) && !taken.includes(name) && REQUIRED_VARIABLES.includes(name) && (DEV_STACK_SETTINGS as readonly string[]).includes(name),
    );
    if (missing.length > 0 && !stack) {
      err.message += `\nSet ${missing.join(', ')} in the environment, or start \`npm run dev\` (no running dev stack found through ${file}).`;
    } else if (missing.length > 0 && differing.length > 0) {
      err.message += `\nThe running dev stack (${file}) was not used: ${differing.join(', ')} differs from its own. Unset it to use the dev stack's settings, or set ${missing.join(', ')} too.`;
    }
    throw err;
  }
  if (taken.length > 0) process.stderr.write(`[${helper}] using ${taken.join(', ')} of the dev stack started by npm run dev (${file}; ${why})\n`);
  return config;
}

function readFile(file: string): DevStack | undefined {
  try {
    return devStackSchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
}

/** Relative to the working directory when inside it (`.data/dev-stack.json` under npm), absolute otherwise. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}
