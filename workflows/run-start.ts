import { CancellationScope, isCancellation, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { RunActivities } from '../activities/run-activities';
import { isTemplateFailure } from '../src/contract/failures';
import type { FirstModelCall, PreparedRun, StartedRun } from '../src/contract/types';
import { PREPARE } from './limits';
import { RunFailed } from './run-clock';
import { RecordClosed, recordClosed, type Answer, type RunParts, type RunSteps } from './run-steps';

/** How the run's first model call came out (`firstCall`). */
export interface FirstOutcome {
  /** The model's answer (the run is prepared: `prepared` is set). */
  answer?: Answer;
  /** How it failed after it was sent: the caller takes it as its first attempt (the run prepared by then; legacy runs: once prepared again, `prepareHere`). */
  failure?: unknown;
}

/** RUN_START_WRITE_DELAY_MS's default, for runs started before the delay was given to them. */
const DEFAULT_START_WRITE_DELAY_MS = 250;

/**
 * The run's start: its preparation (the prompt expanded, the tools listed, the first entries) and its first model
 * call, which are one activity (`firstModelCall`). When the model answers without tool calls, the call records the
 * run's start with its end, through the recorder (runs with `firstCallEnds`), and the workflow completes with no write
 * of its own; otherwise it writes nothing, the view takes the first entries with the call's outcome, and the
 * workflow's next write records them with its first turn (or the run's end), one write. A
 * first call slower than the run's `startWriteDelayMs` has the record say `running` meanwhile, so lists show it
 * (`pending` until then). When the call could not prepare, or failed, the run is prepared here (`prepareStart`, which
 * writes nothing either).
 */
export class RunStart {
  /** The run's inputs as its preparation found them; set once prepared (or carried over a continue-as-new). */
  prepared: PreparedRun | undefined;
  /** When the first call was sent: a preparation made after it gives the same entries (their time is this). */
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
   * The run's first model call, which prepares the run first: its answer, or how it failed after it was sent (for the
   * caller to take as its first attempt; the run is then prepared here). A template's failure is thrown: the run's end.
   */
  async firstCall(runner: string): Promise<FirstOutcome> {
    if (this.parts.legacy) return this.legacyFirstCall(runner);
    const { input, run, log, clock } = this.parts;
    this.firstAt = Date.now();
    log.status = 'running';
    // Each promise a workflow makes costs a captured stack trace (the SDK's stack trace query): this path makes few.
    const options = this.steps.providerCallOptions();
    const call = proxyActivities<RunActivities>(options)
      .firstModelCall({
        run,
        identity: input.identity,
        taskId: input.taskId,
        taskVersion: input.taskVersion,
        payload: input.payload,
        at: this.firstAt,
        runner,
        usage: log.usage,
        ...(input.replay ? { replay: true as const } : {}),
        ...(input.firstCallEnds ? { endsRun: true as const, maxTotalTokens: input.limits.maxTotalTokens } : {}),
      })
      .then(
        (result) => ({ result }),
        (err: unknown) => ({ err }),
      );
    try {
      await this.recordWhenSlow(call);
    } catch (err) {
      // Its write of `running` found the record closed: by the call's own end, written meanwhile (runs with
      // `firstCallEnds`), when the call's outcome says so; otherwise the record's account stands.
      if (!(err instanceof RecordClosed && input.firstCallEnds) || !endedRun(await call)) throw err;
    }
    const outcome = await call;
    if ('err' in outcome) {
      const { err } = outcome;
      const failure = clock.past(err);
      if (isCancellation(err) || failure instanceof RunFailed) throw failure;
      // A record closed first (a cancel's end won over the answer's): its account stands.
      if (isTemplateFailure(err) || recordClosed(err)) throw err;
      await this.prepare();
      return { failure: err };
    }
    const { result } = outcome;
    if ('unprepared' in result) {
      await this.prepare();
      return {};
    }
    const { started, ...answer } = result;
    // An answer that ended the run was recorded with the run's start (`endsRun`): nothing is left to write.
    if (answer.finishedAt !== undefined) {
      this.recorded(started);
      return { answer };
    }
    this.heard(started);
    return { answer: this.steps.heard(answer) };
  }

  /**
   * Prepares the run here (`prepareStart`, retried through a store's stall; a template's fault fails the run), with
   * the entries a first call sent before would have given: the workflow's next write records them.
   */
  async prepare(): Promise<void> {
    const { input, run } = this.parts;
    const { prepareStart } = proxyLocalActivities<RunActivities>(PREPARE);
    this.heard(await prepareStart({ run, identity: input.identity, taskId: input.taskId, taskVersion: input.taskVersion, payload: input.payload, at: this.firstAt ?? Date.now(), ...(input.replay ? { replay: true as const } : {}) }));
  }

  /** What a preparation found, which the store does not have yet: the run is `running` with these first entries, the prompt message 0. */
  private heard(started: StartedRun): void {
    const { log } = this.parts;
    log.status = 'running';
    log.push(...started.entries);
    log.modifiedAt = started.at;
    log.addMessage({ role: 'user', text: started.prompt! });
    this.prepared = started.prepared;
  }

  /**
   * Records the run `running` once its first call has taken the run's `startWriteDelayMs` (at once for 0), so lists
   * show it while the model thinks; a call that answers sooner has the start written with its outcome.
   */
  private async recordWhenSlow(call: Promise<unknown>): Promise<void> {
    const delay = this.parts.input.limits.startWriteDelayMs ?? DEFAULT_START_WRITE_DELAY_MS;
    if (delay <= 0) return this.steps.record();
    if (this.parts.input.timerLeft) {
      // A call that answers first leaves its timer: a run that ends then completes with it (no command to cancel it),
      // and one that goes on hears it fire later, when it does nothing (a cancelled run's timer is cancelled with it).
      const slow = await Promise.race([
        call.then(() => false),
        sleep(delay).then(
          () => true,
          () => false,
        ),
      ]);
      if (slow) await this.steps.record();
      return;
    }
    // Runs triggered before the timer was left: it is cancelled, as their histories have it.
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

  /** What a preparation recorded (legacy), or a first call with the run's end: the run is `running` with these first entries, the prompt is message 0. */
  private recorded(done: StartedRun): void {
    const { log } = this.parts;
    log.status = 'running';
    log.pushRecorded(done.entries, done.at);
    log.promptRecorded();
    this.prepared = done.prepared;
    this.sentUnheard = false;
  }

  /**
   * Legacy, runs started before 2026-11-28 (input without `oneWriter`): the first call (`prepareAndCallModel`) records the
   * run's start itself, RUN_START_WRITE_DELAY_MS into the call or with its end. While its outcome is unheard, the
   * record may have the first entries, which a write of this view's would overwrite: the run's end is then written
   * after them, once prepared again (run-task.ts `failedRun`). Delete once no such run is open.
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

/** Whether a first call's outcome is an answer it recorded as the run's end (`endsRun`). */
const endedRun = (outcome: { result: FirstModelCall } | { err: unknown }) => 'result' in outcome && !('unprepared' in outcome.result) && outcome.result.finishedAt !== undefined;
