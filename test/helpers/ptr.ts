import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/ptr';
import { atTeardown, getStack } from './stack';

/**
 * `ptr` in this process, as a user of the API at `origin` (the shared stack's by default) signed in with `sessionId`,
 * with a home directory of its own (removed at teardown): its output and exit code.
 */
export async function ptrAs(args: string[], sessionId: string, origin = getStack().apiUrl): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-home-'));
  atTeardown(async () => fs.rmSync(home, { recursive: true, force: true }));
  let stdout = '';
  let stderr = '';
  const env = { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), MCP_RUN_ORIGIN: origin, MCP_RUN_SESSION_ID: sessionId };
  const code = await runCli(args, { env, stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
  return { code, stdout, stderr };
}
