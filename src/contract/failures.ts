/**
 * The failure policy, in one place: every ApplicationFailure type the activities throw, whether the run may retry
 * it, and what the run shows for it. The message of a listed failure is written for the run's reader (keys
 * scrubbed, no internals); any other failure reaches the run as a generic reason, its details in the worker's log.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';
import type { ProviderFailureDetails } from './types';

export const FAILURES = {
  /** The task version the run started with is gone: the task was deleted. */
  TaskGone: { retryable: false },
  /** The template cannot be expanded (Mustache's reason). */
  BadTemplate: { retryable: false },
  /** Expanding the template took longer than TEMPLATE_TIMEOUT_MS. */
  TemplateTimeout: { retryable: false },
  /** The expanded prompt is larger than RUN_PROMPT_MAX_BYTES. */
  PromptTooLarge: { retryable: false },
  /** Neither the task nor the operator has a key for the provider. */
  NoKey: { retryable: false },
  /** The provider answered 408, 409, 429 or 5xx, or the call was aborted: try again after a wait. */
  ProviderUnavailable: { retryable: true },
  /** The provider could not be reached (network). */
  ProviderUnreachable: { retryable: true },
  /** The provider refused the call (400, 401, 403, 404...): its message, keys scrubbed. */
  ProviderRejected: { retryable: false },
  /** The provider's answer is not what its API promises. */
  ProviderMalformedAnswer: { retryable: false },
  /** The profile offers more tools than the run's provider accepts (OpenAI: 128): narrow an install's `settings.tools`. */
  TooManyTools: { retryable: false },
  /** The run's record was closed (by a model call whose end the workflow did not hear of, a cancel...): it never changes again. */
  RunClosed: { retryable: false },
  /**
   * The run's owner holds WORKER_MAX_PROVIDER_CALLS_PER_OWNER provider calls on this worker already: the call was
   * refused before it started (src/temporal/owner-slots.ts). The run waits and calls again, without counting an attempt
   * or writing a retry (workflows/run-steps.ts `askModel`).
   */
  OwnerBusy: { retryable: true },
  /** Anything else that went wrong in an activity: retried by the activity's policy; the run shows only that. */
  Internal: { retryable: true },
} as const;

export type FailureType = keyof typeof FAILURES;

/** The record was closed by another writer: the workflow takes the record's account (workflows/run-steps.ts). */
export const RUN_CLOSED: FailureType = 'RunClosed';

/**
 * The template's failures: thrown only while a run is prepared, before it writes anything, and the same however often
 * it is prepared (the task version and trigger data never change): the run's end, never worth preparing again.
 */
export const TEMPLATE_FAILURES: readonly FailureType[] = ['BadTemplate', 'TemplateTimeout', 'PromptTooLarge'];

/** Whether `err` (an activity's failure, or its cause) is one of TEMPLATE_FAILURES. */
export const isTemplateFailure = (err: unknown): boolean => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && TEMPLATE_FAILURES.includes(cause.type as FailureType);
};

/**
 * The activity found the run's record closed (`RunClosed`): its end was written elsewhere. A remote activity's failure
 * carries it as its cause; a local activity's comes as the failure itself.
 */
export const isRunClosed = (err: unknown): boolean => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === RUN_CLOSED;
};

/** The call was refused because its owner's provider calls on the worker are at their cap (`OwnerBusy`). */
export const OWNER_BUSY: FailureType = 'OwnerBusy';

/** Whether `err` (an activity's failure, or its cause) is `OwnerBusy`. */
export const isOwnerBusy = (err: unknown): boolean => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure && cause.type === OWNER_BUSY;
};

/** A failure of a listed type; `message` is what the run will show. */
export function runFailure(type: FailureType, message: string, details?: ProviderFailureDetails): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: !FAILURES[type].retryable, details: details ? [details] : undefined });
}

export const isListedFailure = (type: string | undefined | null): type is FailureType => !!type && Object.prototype.hasOwnProperty.call(FAILURES, type);

/** The generic reason of an unlisted failure: what it was doing, never its internal message. */
export const internalReason = (step: string) => `an internal error stopped ${step}; the worker's log has the details`;

export interface FailureReading {
  retryable: boolean;
  reason: string;
  retryAfterMs?: number;
}

/**
 * What an activity's failure means for the run. `step` names what was being done, for the generic reason and the
 * wording of timeouts ("the provider call", "tool greet").
 */
export function readFailure(err: unknown, step: { name: string; kind: 'provider' | 'tool' | 'other' }): FailureReading {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isListedFailure(cause.type)) {
    const details = (cause.details?.[0] ?? {}) as ProviderFailureDetails;
    return { retryable: !cause.nonRetryable, reason: cause.message, retryAfterMs: details.retryAfterMs };
  }
  if (cause instanceof TimeoutFailure) {
    const lost = cause.timeoutType === TimeoutType.HEARTBEAT;
    const reason =
      step.kind === 'provider'
        ? lost ? 'the worker calling the provider was lost' : 'the provider call timed out'
        : lost ? `the worker running ${step.name} was lost` : `${step.name} timed out`;
    return { retryable: true, reason };
  }
  return { retryable: false, reason: internalReason(step.name) };
}

/**
 * Failures that are not a run's: each workflow's own, with what it means. They never reach a run's reason.
 * - the approval and input updates' validators (workflows/run-controls.ts), which the API maps to its answer;
 * - a webhook delivery's attempt (activities/webhook-delivery.ts);
 * - a schedule's action (activities/scheduled-run.ts): benign, its retry policy waits.
 */
export const APPROVAL_FAILURE = {
  /** The run never asked for this approval: 404. */
  unknown: 'UnknownApproval',
  /** Decided before: 409 `approval_decided`. */
  decided: 'ApprovalDecided',
  /** The run is closing (cancelled, ended): 409 `run_closed`. */
  closed: 'RunClosing',
} as const;

/** The input updates' validators (workflows/run-controls.ts), which the API maps to its answer. */
export const INPUT_FAILURE = {
  /** The run never asked this: 404. */
  unknown: 'UnknownInput',
  /** Answered before: 409 `input_answered`. */
  answered: 'InputAnswered',
  /** The run is closing (cancelled, ended): 409 `run_closed`. */
  closed: APPROVAL_FAILURE.closed,
} as const;

export const WEBHOOK_FAILURE = {
  /** The network guard refused the destination (blocklist): not retried. */
  refused: 'WebhookRefused',
  /** The receiver answered other than 2xx, or not at all: retried with backoff. */
  failed: 'WebhookFailed',
} as const;

export const EVAL_FAILURE = {
  /** LIVE_RUNS_PER_USER (or another limit) is reached: the replay's start is tried again when the limit says. */
  limited: 'EvalReplayLimited',
  /** The replay has not ended yet: the eval looks again later (Temporal's polling pattern). */
  replayStillOpen: 'EvalReplayStillOpen',
} as const;

export const SCHEDULE_FAILURE = {
  /** LIVE_RUNS_PER_USER is reached: the action tries again when the limit says (its retry delay). */
  liveRunsLimit: 'LiveRunsLimit',
  /** The scheduled run has not ended yet: the action looks again later (Temporal's polling pattern). */
  runStillOpen: 'RunStillOpen',
} as const;
