import { parentPort } from 'node:worker_threads';
import { expandTemplate } from './expand';
import { TemplateFailure, type TemplateFailureKind } from './failure';

export interface ExpandTask {
  id: number;
  template: string;
  payload: Record<string, unknown>;
  maxPromptBytes: number;
}

/** A failure is returned, not thrown: a thrown error reaches the pool without its class and kind. */
export type ExpandOutcome = { ok: true; prompt: string; missing: string[] } | { ok: false; kind: TemplateFailureKind; message: string };

/** The message that tells the pool a task has started, so its time limit counts the expansion, not the queue. */
export interface StartedMessage {
  templateStarted: number;
}

/** A thread's entry: piscina calls the default export once per task. */
export default function expandInThread(task: ExpandTask): ExpandOutcome {
  parentPort?.postMessage({ templateStarted: task.id } satisfies StartedMessage);
  try {
    return { ok: true, ...expandTemplate(task.template, task.payload, task.maxPromptBytes) };
  } catch (err) {
    if (err instanceof TemplateFailure) return { ok: false, kind: err.kind, message: err.message };
    throw err;
  }
}
