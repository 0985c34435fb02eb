import { ActivityFailure, TimeoutFailure } from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';

/** A failure that ends the run in `error` with this message as the reason. */
export class RunFailed extends Error {}

/**
 * The run's time limit: a deadline every remote call is bounded by, carried across continue-as-new. Workflow time
 * (`Date.now()` in a workflow) is deterministic, so every use of it here replays the same.
 */
export class RunClock {
  constructor(
    readonly deadline: number,
    private readonly timeoutMs: number,
  ) {}

  /** Time left before the deadline (ms; 0 or less when past it). */
  left(): number {
    return this.deadline - Date.now();
  }

  /** The run's failure at its time limit. */
  timeLimit(): RunFailed {
    return new RunFailed(`the run exceeded its time limit of ${Math.round(this.timeoutMs / 1000)} s`);
  }

  /** Options for a remote call: its own bound, cut to what is left of the run's time (scheduling included). */
  bounded<T extends { startToCloseTimeout: number }>(options: T): T {
    const left = this.left();
    if (left <= 0) throw this.timeLimit();
    return { ...options, startToCloseTimeout: Math.min(options.startToCloseTimeout, left), scheduleToCloseTimeout: left };
  }

  /** A remote call's failure, as the time limit when it was the deadline that ended it. */
  past(err: unknown): unknown {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (!(cause instanceof TimeoutFailure) || cause.timeoutType === TimeoutType.HEARTBEAT) return err;
    return cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE || this.left() <= 0 ? this.timeLimit() : err;
  }
}
