/** Node's longest timer (about 24.8 days): what the SDK's own request time-out is set to when this one bounds a call. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A call's time-out for silence (MCP_CALL_TIMEOUT_MS): `onIdle` runs once `ms` pass without a sign of life
 * (`restart`) while not paused. A pause (a person is being asked something) stops the clock; the returned function
 * ends that pause, and the full `ms` starts again once no pause is left. After `stop` or `onIdle`, nothing runs again.
 */
export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;
  private pauses = 0;
  private ended = false;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {
    this.arm();
  }

  /** A sign of life (the server's progress): the full time again, unless paused. */
  restart(): void {
    if (this.pauses === 0) this.arm();
  }

  /** Stops the clock until the returned function is called (once; pauses nest). */
  pause(): () => void {
    this.pauses++;
    this.clear();
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      if (--this.pauses === 0) this.arm();
    };
  }

  stop(): void {
    this.ended = true;
    this.clear();
  }

  private arm(): void {
    this.clear();
    if (this.ended) return;
    this.timer = setTimeout(() => {
      this.ended = true;
      this.onIdle();
    }, this.ms);
  }

  private clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
