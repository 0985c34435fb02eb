import { spawn, type ChildProcess } from 'node:child_process';
import { childEnv } from './env';

/**
 * A worker in its own process (src/worker.ts, as operators run it), so a test can kill it for real or run several.
 * Resolves once it polls; the caller kills it (SIGKILL in `afterEach` is fine).
 */
export async function startWorkerProcess(env: Record<string, string>): Promise<ChildProcess> {
  // One process (not the tsx wrapper, which would leave its node child alive when killed).
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes('worker polling')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}: ${output}`)));
  });
  return child;
}
