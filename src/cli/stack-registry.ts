/**
 * The stacks `npm run dev` runs on this machine, one file each under `$XDG_CACHE_HOME/prompt-task-runner/stacks/`
 * (`~/.cache/…` without XDG_CACHE_HOME): `<pid>.json` names the stack's data directory and API. Only `npm run dev`
 * registers (the test stacks do not); an entry whose process is gone is dropped by whoever reads it, and `npm run dev`
 * drops at its start those whose API no longer answers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { portOpen } from './dev-processes';

/** The stack's own file (`<dataDir>/dev-stack.json`) has the rest; the process id and API say whether it still runs. */
const entrySchema = z.object({ dataDir: z.string(), stack: z.object({ pid: z.number().int().positive(), apiUrl: z.string() }) });
export type StackEntry = z.infer<typeof entrySchema>;

type CacheEnv = { XDG_CACHE_HOME?: string; HOME?: string };

export const stacksDir = (env: CacheEnv) =>
  path.join(env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache'), 'prompt-task-runner', 'stacks');

/** Registers the stack of `dataDir`; returns the entry's file (to unregister). Written whole (0600, in a 0700 directory). */
export function registerStack(env: CacheEnv, entry: StackEntry): string {
  const dir = stacksDir(env);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${entry.stack.pid}.json`);
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(entry, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
  return file;
}

export const unregisterStack = (file: string) => fs.rmSync(file, { force: true });

/** The registered stacks whose process runs; the entries of processes gone (or unreadable) are removed. */
export function registeredStacks(env: CacheEnv): StackEntry[] {
  const dir = stacksDir(env);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
  const found: StackEntry[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const entry = read(file);
    if (entry && alive(entry.stack.pid)) found.push(entry);
    else fs.rmSync(file, { force: true });
  }
  return found;
}

/** Removes the entries whose API no longer answers (a process id reused by another program after a reboot). */
export async function dropUnreachableStacks(env: CacheEnv): Promise<void> {
  for (const entry of registeredStacks(env)) {
    const port = Number(new URL(entry.stack.apiUrl).port || 80);
    if (!(await portOpen(port))) unregisterStack(path.join(stacksDir(env), `${entry.stack.pid}.json`));
  }
}

function read(file: string): StackEntry | undefined {
  try {
    return entrySchema.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
}

/** Whether process `pid` runs. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
