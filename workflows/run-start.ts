import { isCancellation, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities/run-activities';
import { isTemplateFailure } from '../src/contract/failures';
import type { FirstModelCall, PreparedRun, StartedRun } from '../src/contract/types';
import { PREPARE } from './limits';
import { RunFailed } from './run-clock';
import type { Answer, RunParts, RunSteps } from './run-steps';

/** How the run's first model call came out (`firstCall`). */
export interface FirstOutcome {
  /** The model's answer (the run is prepared: `prepared` is set). */
  answer?: Answer;
  /** How it failed after it was sent (the record may have the first entries: they are prepared again, the same). */
  failure?: unknown;
}

/**
 * The run's start: its preparation (the prompt expanded, the tools listed, the record `running` with its first
 * entries) and what this execution knows of it. Preparing is done by the first model call (`prepareAndCallModel`:
 * one activity for a quick run), or here (`prepareRun`) when that call did not prepare or its outcome was not heard.
 * While the first call's outcome is unheard (`unheard`), the record may have the first entries, which a write of this
 * view's would overwrite: the run's end is written after them, once prepared again (the same entries, the same time).
 */
export class RunStart {
  /** The run's inputs as its preparation found them; set once prepared (or carried over a continue-as-new). */
  prepared: PreparedRun | undefined;
  /** The first call was sent and this view has not heard what it prepared. */
  private sentUnheard = false;
  /** When the first call was sent: a preparation made again after it writes the same entries (their time is this). */
  private firstAt: number | undefined;

  constructor(
    private readonly parts: RunParts,
    private readonly steps: RunSteps,
  ) {
    this.prepared = parts.input.resume?.prepared;
  }

  /** Whether the record may hold a start this view has not heard of (see the class). */
  get unheard(): boolean {
    return this.sentUnheard;
  }

  /** Prepares the run in a local activity of its own (retried through a store's stall; a template's fault fails the run). */
  async prepareHere(): Promise<void> {
    const { input, run } = this.parts;
    const { prepareRun } = proxyLocalActivities<RunActivities>(PREPARE);
    this.started(await prepareRun({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, ...(this.firstAt !== undefined ? { at: this.firstAt } : {}) }));
  }

  /**
   * The run's first model call, which prepares the run first: its answer; or how it failed after it was sent; or
   * nothing when preparing failed (the caller then prepares the run here). A template's failure is thrown: the run's end.
   */
  async firstCall(runner: string): Promise<FirstOutcome> {
    const { input, run, log, clock } = this.parts;
    const options = this.steps.providerCallOptions();
    this.firstAt = Date.now();
    // The view says `running` while the call prepares and asks the model (the record does once it has prepared).
    const before = log.status;
    log.status = 'running';
    let result: FirstModelCall;
    this.sentUnheard = true;
    try {
      result = await proxyActivities<RunActivities>(options).prepareAndCallModel({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, at: this.firstAt, runner, usage: log.usage, maxTotalTokens: input.limits.maxTotalTokens });
    } catch (err) {
      const failure = clock.past(err);
      if (isCancellation(err) || failure instanceof RunFailed) throw failure;
      log.status = before;
      if (isTemplateFailure(err)) {
        // Thrown while preparing, before anything was written: the run's end, as prepareRun's would be.
        this.sentUnheard = false;
        throw err;
      }
      return { failure: err };
    }
    if ('unprepared' in result) {
      // Preparing failed before it wrote anything: the workflow prepares the run on its own.
      this.sentUnheard = false;
      log.status = before;
      return {};
    }
    const { started, ...answer } = result;
    this.started(started);
    return { answer };
  }

  /** What the run's preparation recorded: the run is `running` with these first entries, the prompt is message 0. */
  private started(done: StartedRun): void {
    const { log } = this.parts;
    log.status = 'running';
    log.pushRecorded(done.entries, done.at);
    log.promptRecorded();
    this.prepared = done.prepared;
    this.sentUnheard = false;
  }
}
