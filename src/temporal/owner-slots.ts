import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { Counter, type Registry } from 'prom-client';
import { runOwnerOf } from '../contract/constants';
import { OWNER_BUSY } from '../contract/failures';
import { MODEL_CALLS } from './activity-metrics';

/**
 * The provider calls each owner holds on this worker, at most `cap` each (WORKER_MAX_PROVIDER_CALLS_PER_OWNER).
 *
 * Why a call over the cap fails at once instead of waiting here: an activity waiting on a semaphore in this process
 * still holds one of the worker's Temporal slots (WORKER_MAX_PROVIDER_CALLS), so a flood of one owner's calls would
 * fill every slot with waiters, the very thing the cap is for. Nor can the SDK's custom slot suppliers (`tuner`)
 * enforce it: a slot is reserved before the task is polled, when its owner is not known yet, and `markSlotUsed`, which
 * sees the task, cannot hand it back. So the call is refused before its work starts (`OwnerBusy`, retryable, benign),
 * which frees the slot in milliseconds, and the run waits on a timer, with no slot held, and calls again
 * (workflows/run-steps.ts `askModel`: no attempt counted, no retry written). The cost is one failed activity and one
 * timer in the run's history per wait, and a freed slot that may stay unused until a waiting run's timer fires.
 */
export class OwnerSlots {
  private readonly held = new Map<string, number>();

  constructor(
    readonly cap: number,
    private readonly onBusy: () => void = () => undefined,
  ) {}

  /** The calls `owner` holds now. */
  heldBy(owner: string): number {
    return this.held.get(owner) ?? 0;
  }

  /**
   * Runs `work` in one of `owner`'s slots, freed however the work ends. Throws `OwnerBusy` without starting the work
   * when the owner holds `cap` calls already.
   */
  async hold<T>(owner: string, work: () => Promise<T>): Promise<T> {
    const held = this.heldBy(owner);
    if (held >= this.cap) {
      this.onBusy();
      throw ApplicationFailure.create({
        type: OWNER_BUSY,
        message: `the owner's runs hold ${this.cap} provider calls on this worker already (WORKER_MAX_PROVIDER_CALLS_PER_OWNER); the run calls again shortly`,
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    this.held.set(owner, held + 1);
    try {
      return await work();
    } finally {
      const left = this.heldBy(owner) - 1;
      if (left > 0) this.held.set(owner, left);
      else this.held.delete(owner);
    }
  }
}

/**
 * An activity interceptor that holds every provider call (`MODEL_CALLS`) in a slot of its run's owner, at most `cap`
 * each, and counts the calls refused in `ptr_provider_calls_owner_busy_total`. Give it before `activityMetrics`, so a
 * refused call is not counted as a provider call. An activity whose input names no run is not capped.
 */
export function ownerSlotCap(cap: number, registry: Registry): ActivityInterceptorsFactory {
  const refused = new Counter({
    name: 'ptr_provider_calls_owner_busy_total',
    help: 'Provider calls refused because their owner held WORKER_MAX_PROVIDER_CALLS_PER_OWNER calls on this worker (each is made again later).',
    registers: [registry],
  });
  const slots = new OwnerSlots(cap, () => refused.inc());
  return (ctx) => ({
    inbound: {
      execute(input, next) {
        if (!MODEL_CALLS.has(ctx.info.activityType)) return next(input);
        const id = (input.args[0] as { run?: { id?: unknown } } | undefined)?.run?.id;
        const owner = typeof id === 'string' ? runOwnerOf(id) : undefined;
        return owner === undefined ? next(input) : slots.hold(owner, () => next(input));
      },
    },
  });
}
