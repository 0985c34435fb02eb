import path from 'node:path';
import { Piscina } from 'piscina';
import { expandFlatTemplate } from './expand';
import { TemplateFailure } from './failure';
import type { ExpandOutcome, ExpandTask, StartedMessage } from './render-thread';

export { TemplateFailure, type TemplateFailureKind } from './failure';

export interface TemplateSandbox {
  /**
   * Expands in a thread of the sandbox (expand.ts says how); a small flat template with small data, whose expansion
   * cannot take long, on the calling thread. Throws TemplateFailure when the template cannot be
   * expanded within the limits; any other error is the sandbox's own (closed, a thread that cannot start). Other
   * expansions keep running while one is stuck.
   */
  expand(template: string, payload: Record<string, unknown>): Promise<{ prompt: string; missing: string[] }>;
  /** Terminates every thread, stuck ones too, so the process can exit; expansions still running fail. */
  close(): Promise<void>;
}

export interface TemplateSandboxOptions {
  /** Past it, the thread running the expansion is terminated (and replaced): counted from its start, not the queue. */
  timeoutMs: number;
  /** UTF-8 bytes; rendering stops as soon as the prompt passes it. */
  maxPromptBytes: number;
  /** How many expansions run at once: one stuck template holds one thread until its timeout. */
  threads?: number;
}

const MiB = 1024 * 1024;
/**
 * A flat template (expand.ts, expandFlatTemplate) at most this long, with trigger data at most INLINE_PAYLOAD_CHARS,
 * expands on the calling thread: in time linear in both, less than the hand-off to a thread would cost.
 */
const INLINE_TEMPLATE_CHARS = 16 * 1024;
const INLINE_PAYLOAD_CHARS = 64 * 1024;

// Compiled (dist/), the thread runs render-thread.js. From source the thread needs tsx itself: a worker thread does
// not inherit hooks registered in-process (mocha's `require: tsx/cjs`), and an explicit execArgv replaces the
// inherited one (`node --import tsx`), so every source run gets the same loader.
const SOURCE = path.extname(__filename) === '.ts';
const THREAD_FILE = path.join(__dirname, `render-thread${path.extname(__filename)}`);
const EXEC_ARGV = SOURCE ? ['--require', require.resolve('tsx/cjs')] : undefined;

/**
 * Threads in which expansion runs where a time limit can stop it: a template whose list sections nest deeply takes
 * time exponential in the nesting, and synchronous work on the worker's main thread would stall every run.
 */
export function createTemplateSandbox({ timeoutMs, maxPromptBytes, threads = 2 }: TemplateSandboxOptions): TemplateSandbox {
  // Room for the payload, the prompt (two bytes a character at worst) and its copy to the pool, and the thread
  // itself. Past it the thread dies alone (ERR_WORKER_OUT_OF_MEMORY), not the process.
  const heapMb = 128 + Math.ceil((8 * maxPromptBytes) / MiB);
  const pool = new Piscina<ExpandTask, ExpandOutcome>({
    filename: THREAD_FILE,
    execArgv: EXEC_ARGV,
    // All started at once and kept: a thread's start (longer from source) is paid here, not by a run.
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: 1,
    resourceLimits: { maxOldGenerationSizeMb: heapMb },
  });
  // An idle thread that fails is replaced by the pool; a busy one fails its expansion, which reports it. Without a
  // listener the pool's 'error' event would throw on the worker's main thread.
  pool.on('error', () => {});

  const onStart = new Map<number, () => void>();
  pool.on('message', (message: Partial<StartedMessage>) => {
    if (typeof message?.templateStarted === 'number') onStart.get(message.templateStarted)?.();
  });
  let nextId = 0;
  let closed = false;

  return {
    async expand(template, payload) {
      if (closed) throw new Error('the template sandbox is closed');
      if (template.length <= INLINE_TEMPLATE_CHARS && withinChars(payload, INLINE_PAYLOAD_CHARS)) {
        const expanded = expandFlatTemplate(template, payload, maxPromptBytes);
        if (expanded) return expanded;
      }
      const id = nextId++;
      const abort = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      // Aborting a task that is running makes piscina terminate its thread and start another.
      onStart.set(id, () => (timer = setTimeout(() => abort.abort(), timeoutMs)));
      try {
        const outcome = await pool.run({ id, template, payload, maxPromptBytes }, { signal: abort.signal });
        if (!outcome.ok) throw new TemplateFailure(outcome.kind, outcome.message);
        return { prompt: outcome.prompt, missing: outcome.missing };
      } catch (err) {
        if (err instanceof TemplateFailure) throw err;
        if (abort.signal.aborted) {
          throw new TemplateFailure('timeout', `the prompt template took longer than ${timeoutMs} ms to expand (limit TEMPLATE_TIMEOUT_MS)`);
        }
        if ((err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
          throw new TemplateFailure('too_large', `expanding the prompt template needed more than ${heapMb} MB of memory (a limit that grows with RUN_PROMPT_MAX_BYTES)`);
        }
        if (closed) throw new Error('the template sandbox was closed while the template was expanding');
        throw err;
      } finally {
        clearTimeout(timer);
        onStart.delete(id);
      }
    },

    async close() {
      closed = true;
      // destroy(), not close(): close() waits for running tasks, and a stuck one ends only at its timeout.
      await pool.destroy();
    },
  };
}

/** Whether JSON data's strings, keys and other values come to at most `max` characters; walks no further than that. */
function withinChars(value: unknown, max: number): boolean {
  let left = max;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') left -= v.length;
    else if (v !== null && typeof v === 'object') {
      for (const key in v) {
        left -= key.length + 1;
        if (left < 0 || !walk((v as Record<string, unknown>)[key])) return false;
      }
    } else left -= 8;
    return left >= 0;
  };
  return walk(value);
}
