import { CancellationScope, isCancellation, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
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
  /** How it failed after it was sent: the caller takes it as its first attempt (legacy runs: once prepared again, `prepareHere`). */
  failure?: unknown;
}

/** RUN_START_WRITE_DELAY_MS's default, for runs started before the delay was given to them. */
const DEFAULT_START_WRITE_DELAY_MS = 250;

/**
 * The run's start: its preparation (the prompt expanded, the tools listed, the first entries, `prepareStart`, which
 * writes nothing) and its first model call. The view has the first entries from then on; the record has them with the
 * workflow's first write: with the run's end or its first turn when the model answers within the run's
 * `startWriteDelayMs`, else at that delay, while the model thinks (lists show the run `pending` until then).
 */
export class RunStart {
  /** The run's inputs as its preparation found them; set once prepared (or carried over a continue-as-new). */
  prepared: PreparedRun | undefined;
  /** Legacy: when the first call was sent (a preparation made again after it writes the same entries, at this time). */
  private firstAt: number | undefined;
  /** Legacy (`legacyFirstCall`): the first call was sent and this view has not heard what it recorded. */
  private sentUnheard = false;

  constructor(
    private readonly parts: RunParts,
    private readonly steps: RunSteps,
  ) {
    this.prepared = parts.input.resume?.prepared;
  }

  /** Legacy: whether the record may hold a start this view has not heard of (`legacyFirstCall`). */
  get unheard(): boolean {
    return this.sentUnheard;
  }

  /**
   * Prepares the run, its first model call and its answer (or how that call failed, for the caller to take as its
   * first attempt). A template's failure is thrown: the run's end.
   */
  async firstCall(runner: string): Promise<FirstOutcome> {
    if (this.parts.legacy) return this.legacyFirstCall(runner);
    const { input, run, log } = this.parts;
    const started = await proxyLocalActivities<RunActivities>(PREPARE).prepareStart({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, at: Date.now() });
    log.status = 'running';
    log.push(...started.entries);
    log.modifiedAt = started.at;
    log.addMessage({ role: 'user', text: started.prompt! });
    this.prepared = started.prepared;
    const call = this.steps.callModelOnce(started.prepared).then(
      (answer) => ({ answer }),
      (failure: unknown) => ({ failure }),
    );
    await this.recordWhenSlow(call);
    const outcome = await call;
    if ('failure' in outcome) {
      const failure = this.parts.clock.past(outcome.failure);
      if (isCancellation(outcome.failure) || failure instanceof RunFailed) throw failure;
    }
    return outcome;
  }

  /**
   * Records the run's start once its first call has taken the run's `startWriteDelayMs` (at once for 0), so the
   * record and lists show it `running` with its prompt while the model thinks; a call that answers sooner has the start
   * written with its outcome.
   */
  private async recordWhenSlow(call: Promise<unknown>): Promise<void> {
    const delay = this.parts.input.limits.startWriteDelayMs ?? DEFAULT_START_WRITE_DELAY_MS;
    if (delay <= 0) return this.steps.record();
    const timer = new CancellationScope();
    const slow = await Promise.race([
      call.then(() => false),
      timer.run(() => sleep(delay)).then(
        () => true,
        () => false,
      ),
    ]);
    if (slow) await this.steps.record();
    else timer.cancel();
  }

  /** Legacy: prepares the run in a local activity of its own, which records its start (retried through a store's stall; a template's fault fails the run). */
  async prepareHere(): Promise<void> {
    const { input, run } = this.parts;
    const { prepareRun } = proxyLocalActivities<RunActivities>(PREPARE);
    this.recorded(await prepareRun({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, ...(this.firstAt !== undefined ? { at: this.firstAt } : {}) }));
  }

  /** Legacy: what a preparation recorded: the run is `running` with these first entries, the prompt is message 0. */
  private recorded(done: StartedRun): void {
    const { log } = this.parts;
    log.status = 'running';
    log.pushRecorded(done.entries, done.at);
    log.promptRecorded();
    this.prepared = done.prepared;
    this.sentUnheard = false;
  }

  /**
   * Legacy, runs started before 2026-11-28 (patch `one-writer`): the first call (`prepareAndCallModel`) records the
   * run's start itself, RUN_START_WRITE_DELAY_MS into the call or with its end. While its outcome is unheard, the
   * record may have the first entries, which a write of this view's would overwrite: the run's end is then written
   * after them, once prepared again (run-task.ts `failedRun`). Delete with the patch once no such run is open.
   */
  private async legacyFirstCall(runner: string): Promise<FirstOutcome> {
    const { input, run, log, clock } = this.parts;
    const options = this.steps.providerCallOptions();
    this.firstAt = Date.now();
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
        this.sentUnheard = false;
        throw err;
      }
      return { failure: err };
    }
    if ('unprepared' in result) {
      this.sentUnheard = false;
      log.status = before;
      return {};
    }
    const { started, ...answer } = result;
    this.recorded(started);
    return { answer };
  }
}
