import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { childEnv } from '../helpers/env';

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
  /** The harness stopped or killed it on purpose (a fault it injected, or the end of the suite). */
  expected: boolean;
}

/**
 * One server of the fault harness as a child process: started, killed (SIGKILL), stalled (SIGSTOP/SIGCONT),
 * stopped (SIGTERM) and started again with the same arguments, so with the same port and data. Every start's
 * stdout and stderr go to a file of their own (`<logDir>/<name>.<start>.log`) for the suite's final scan.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private starts = 0;
  private expectingExit = false;
  private stalled = false;
  private readyStart = 0;
  readonly logFiles: string[] = [];
  readonly exits: ProcessExit[] = [];
  /** Called when the process exits, once it was ready, without the harness asking it to (a crash). */
  onCrash: (exit: ProcessExit) => void = () => undefined;

  constructor(
    readonly name: string,
    private readonly spec: ProcessSpec,
    private readonly logDir: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and waits until it is ready; rejects with its output when it exits or times out first. */
  async start(): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`);
    const start = ++this.starts;
    const file = path.join(this.logDir, `${this.name}.${start}.log`);
    this.logFiles.push(file);
    const log = fs.createWriteStream(file);
    let output = '';
    const child = spawn(this.spec.command, this.spec.args, { env: childEnv(this.spec.env ?? {}), stdio: ['ignore', 'pipe', 'pipe'], cwd: process.cwd() });
    this.child = child;
    this.expectingExit = false;
    this.stalled = false;
    const capture = (d: Buffer) => {
      log.write(d);
      if (output.length < 1_000_000) output += d.toString();
    };
    child.stdout!.on('data', capture);
    child.stderr!.on('data', capture);
    const exited = new Promise<never>((_, reject) => {
      child.once('exit', (code, signal) => {
        log.end();
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

  /** SIGTERM (after SIGCONT, should it be stalled), SIGKILL if it is still alive after 15 s. */
  async stop(): Promise<void> {
    if (!this.running) return;
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 15_000);
    try {
      await this.signalAndWait('SIGTERM');
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGSTOP: the process holds its connections and answers nothing. */
  stall(): void {
    this.child!.kill('SIGSTOP');
    this.stalled = true;
  }

  resume(): void {
    this.child!.kill('SIGCONT');
    this.stalled = false;
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    this.expectingExit = true;
    const done = new Promise((r) => child.once('exit', r));
    if (this.stalled) child.kill('SIGCONT');
    child.kill(signal);
    await done;
  }
}
