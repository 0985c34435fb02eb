import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ferretDbArgs, waitFor } from '../../src/cli/dev-processes';
import { searchAttributeFlags } from '../../src/temporal/search-attributes';
import { devServerDynamicConfigFlags, devServerSqliteFlags } from '../../src/temporal/dev-server-config';
import { childEnv } from './env';
import { waitForPort } from './net';

/** How a managed process is started, and how to tell it is ready to serve. */
export interface ProcessSpec {
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** Resolves once the process serves; `output()` is what it wrote so far in this start. */
  ready(output: () => string): Promise<void>;
  readyTimeoutMs: number;
}

export interface ProcessExit {
  name: string;
  start: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The owner stopped or killed it on purpose (a fault it injected, or the end of the tests). */
  expected: boolean;
}

/** How long `stop()` waits after SIGTERM before it sends SIGKILL. */
const STOP_GRACE_MS = 15_000;
/** What a start keeps of the process's output in memory (for `ready` and for the error when it fails). */
const OUTPUT_KEPT = 1_000_000;

/**
 * A server the tests run as a child process: started, killed (SIGKILL), stalled (SIGSTOP/SIGCONT), stopped (SIGTERM)
 * and started again with the same arguments, so with the same port and data. With a `logDir`, every start's stdout
 * and stderr go to a file of their own (`<logDir>/<name>.<start>.log`); without one, only to memory.
 */
export class ManagedProcess {
  private current: ChildProcess | undefined;
  private starting: Promise<void> | undefined;
  private starts = 0;
  private expectingExit = false;
  private isStalled = false;
  private readyStart = 0;
  readonly logFiles: string[] = [];
  readonly exits: ProcessExit[] = [];
  /** Called when the process exits, once it was ready, without its owner asking it to (a crash). */
  onCrash: (exit: ProcessExit) => void = () => undefined;

  constructor(
    readonly name: string,
    private readonly spec: ProcessSpec,
    private readonly logDir?: string,
  ) {}

  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** The child process of the latest start. */
  get child(): ChildProcess | undefined {
    return this.current;
  }

  get running(): boolean {
    return !!this.current && this.current.exitCode === null && this.current.signalCode === null;
  }

  get stalled(): boolean {
    return this.running && this.isStalled;
  }

  /** Starts the process and waits until it is ready; rejects with its output when it exits or times out first. */
  start(): Promise<void> {
    if (this.running || this.starting) throw new Error(`${this.name} is already running`);
    this.starting = this.startOnce().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Waits for a start under way, or starts the process unless it runs. */
  async ensureRunning(): Promise<void> {
    if (this.starting) return this.starting;
    if (!this.running) await this.start();
  }

  private async startOnce(): Promise<void> {
    const start = ++this.starts;
    let log: fs.WriteStream | undefined;
    if (this.logDir) {
      const file = path.join(this.logDir, `${this.name}.${start}.log`);
      this.logFiles.push(file);
      log = fs.createWriteStream(file);
    }
    let output = '';
    const child = spawn(this.spec.command, this.spec.args, { env: childEnv(this.spec.env ?? {}), stdio: ['ignore', 'pipe', 'pipe'], cwd: process.cwd() });
    this.current = child;
    this.expectingExit = false;
    this.isStalled = false;
    const capture = (d: Buffer) => {
      log?.write(d);
      if (output.length < OUTPUT_KEPT) output += d.toString();
    };
    child.stdout!.on('data', capture);
    child.stderr!.on('data', capture);
    // The log closes once the child's output has all been read ('close'; 'exit' may come before its last lines).
    child.once('close', () => log?.end());
    const exited = new Promise<never>((_, reject) => {
      child.once('exit', (code, signal) => {
        const exit = { name: this.name, start, code, signal, expected: this.expectingExit };
        this.exits.push(exit);
        if (!exit.expected && this.readyStart === start) this.onCrash(exit);
        reject(new Error(`${this.name} exited (code ${code}, signal ${signal}) before it was ready:\n${output.slice(-3000)}`));
      });
    });
    exited.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.name} was not ready within ${this.spec.readyTimeoutMs} ms:\n${output.slice(-3000)}`)), this.spec.readyTimeoutMs);
    });
    try {
      await Promise.race([this.spec.ready(() => output), exited, timeout]);
      this.readyStart = start;
    } catch (err) {
      await this.kill();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL: a crash, nothing flushed. Resolves once it has exited. */
  kill(): Promise<void> {
    return this.signalAndWait('SIGKILL');
  }

  /**
   * SIGKILL without waiting, for when the owner itself is exiting (`process.on('exit')` runs nothing asynchronous):
   * no server outlives the tests that started it.
   */
  killNow(): void {
    if (!this.running) return;
    this.expectingExit = true;
    this.current!.kill('SIGKILL');
  }

  /** SIGTERM (after SIGCONT, should it be stalled), SIGKILL if it is still alive after `graceMs`. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    if (!this.running) return;
    const child = this.current!;
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await this.signalAndWait('SIGTERM');
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGSTOP: the process holds its connections and answers nothing. */
  stall(): void {
    if (!this.running) throw new Error(`${this.name} is not running`);
    this.current!.kill('SIGSTOP');
    this.isStalled = true;
  }

  resume(): void {
    if (!this.running) return;
    this.current!.kill('SIGCONT');
    this.isStalled = false;
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.current;
    if (!child || !this.running) return;
    this.expectingExit = true;
    const done = new Promise((r) => child.once('exit', r));
    if (this.isStalled) child.kill('SIGCONT');
    child.kill(signal);
    await done;
  }
}

/**
 * FerretDB 1.x on the SQLite files of `dir`, on 127.0.0.1:`port`. Not `?mode=memory`: with it, FerretDB 1.24.2
 * deadlocks on any update of an existing document (the update's transaction never gets its lock, and every later
 * command on the collection hangs behind it).
 */
export function ferretDbSpec(options: { bin: string; dir: string; port: number; logLevel?: 'warn' | 'error' }): ProcessSpec {
  return {
    command: options.bin,
    args: ferretDbArgs(options),
    ready: () => waitForPort(options.port, 30_000),
    readyTimeoutMs: 30_000,
  };
}

/**
 * `temporal server start-dev` on 127.0.0.1:`port` (no Web UI), with the search attributes runs use; in memory, or on
 * `dbFile` (so it restarts with its data). Ready once its namespace answers (the port opens before it is registered).
 */
export function temporalDevSpec(options: { cli: string; port: number; dbFile?: string; logLevel?: 'warn' | 'error' }): ProcessSpec {
  return {
    command: options.cli,
    args: [
      'server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--headless',
      ...(options.dbFile ? ['--db-filename', options.dbFile, ...devServerSqliteFlags()] : []),
      '--log-level', options.logLevel ?? 'error',
      ...devServerDynamicConfigFlags(), ...searchAttributeFlags(),
    ],
    ready: () => temporalNamespaceReady(options.port),
    readyTimeoutMs: 90_000,
  };
}

async function temporalNamespaceReady(port: number): Promise<void> {
  await waitForPort(port, 60_000);
  const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
  try {
    await waitFor(() => connection.workflowService.describeNamespace({ namespace: 'default' }).then(() => true), "the dev server's namespace", 60_000);
  } finally {
    await connection.close();
  }
}

/** A TypeScript entry point of this repository in one node process (not the tsx wrapper, which would leave its node child alive when killed). */
const nodeScript = (file: string, env: Record<string, string>) => ({ command: process.execPath, args: ['--import', 'tsx', file], env });

/** What src/worker.ts logs once it polls its task queues. */
export const WORKER_READY = 'worker polling';

/** A worker (src/worker.ts, as operators run it): ready once it polls. */
export function workerSpec(env: Record<string, string>): ProcessSpec {
  return { ...nodeScript('src/worker.ts', env), ready: (output) => waitFor(async () => output().includes(WORKER_READY), 'the worker', 120_000), readyTimeoutMs: 120_000 };
}

/** The API (src/server.ts, as operators run it) at `url`: ready once `/healthz` answers. */
export function apiSpec(env: Record<string, string>, url: string): ProcessSpec {
  return { ...nodeScript('src/server.ts', env), ready: () => waitFor(async () => (await fetch(`${url}/healthz`)).ok, 'the API', 60_000), readyTimeoutMs: 60_000 };
}
