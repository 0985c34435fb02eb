import type { RunStatusData } from '../../http/routes/runs/events';
import type { ApiClient } from './client';
import { Failure, isTransient, UsageError } from './errors';
import { createSseParser } from './sse';

export interface FollowHandlers {
  entry(id: number, entry: any): void;
  status(status: RunStatusData): void;
  /** The model's answer so far (`text`), or `reset`: drop it (a retried call starts over, or the entry replaces it). */
  delta?(delta: { text?: string; reset?: boolean }): void;
  /** The stream dropped (or could not open) before the run ended; the next attempt is in `delayMs`. */
  reconnecting(reason: string, delayMs: number): void;
  /** What one read of the stream brought has been handled. */
  read?(): void;
}

export interface FollowOptions {
  /** Waits before each consecutive attempt; past the last one, following fails. */
  retryDelaysMs?: readonly number[];
  /** A stream silent this long (the server sends a comment every EVENTS_HEARTBEAT_MS, 15 s) is taken as dropped. */
  idleMs?: number;
  /** A stream open this long (and not dropped for silence) worked: the attempts start again. */
  workedMs?: number;
}

/** About half a minute of attempts: an API restarting comes back within it. */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000, 5000, 5000, 5000, 5000];
const IDLE_MS = 60_000;
/**
 * A stream open this long worked, even without new entries (a run waiting for an approval sends none, but the
 * server's heartbeats keep it from going silent): one dropped for silence never did.
 */
const WORKED_MS = 5000;

const parseData = (data: string, event: string): any => {
  try {
    return JSON.parse(data);
  } catch {
    throw new Failure('invalid_answer', `the event stream sent a ${event} event whose data is not JSON`);
  }
};

/**
 * Follows a run over `GET <runPath>/events` (docs/runs.md, "Following a run live") until its `end` event, which it
 * returns. A stream that drops, goes silent or cannot be opened (the API unreachable, 5xx, 429) is opened again
 * with `Last-Event-ID` set to the last entry received, so each entry is handled once, in order. Throws Failure for
 * an error answer that another attempt would not change (404: the run is gone), or once the attempts run out: a
 * stream counts as an attempt that failed unless it brought a new entry or stayed open WORKED_MS, so a server that
 * keeps closing streams at once is not retried for ever.
 */
export async function followRun(client: ApiClient, runPath: string, on: FollowHandlers, options: FollowOptions = {}): Promise<RunStatusData> {
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
  const idleMs = options.idleMs ?? IDLE_MS;
  const workedMs = options.workedMs ?? WORKED_MS;
  let lastId: number | undefined;
  let failures = 0;
  for (;;) {
    const controller = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    /** Dropped for silence: nothing came for `idleMs`. */
    let silent = false;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        silent = true;
        controller.abort();
      }, idleMs);
    };
    let progressed = false;
    let openedAt: number | undefined;
    let end: RunStatusData | undefined;
    let reason = 'the stream closed before the run ended';
    try {
      touch();
      const res = await client.stream(`${runPath}/events`, lastId, controller.signal);
      openedAt = Date.now();
      const parser = createSseParser((ev) => {
        if (ev.event === 'entry') {
          const id = Number(ev.id);
          if (!Number.isSafeInteger(id) || (lastId !== undefined && id <= lastId)) return;
          const entry = parseData(ev.data, 'entry');
          lastId = id;
          progressed = true;
          on.entry(id, entry);
        } else if (ev.event === 'status') {
          on.status(parseData(ev.data, 'status'));
        } else if (ev.event === 'delta') {
          on.delta?.(parseData(ev.data, 'delta'));
        } else if (ev.event === 'end') {
          end = parseData(ev.data, 'end');
        }
      });
      const decoder = new TextDecoder();
      for await (const chunk of (res.body ?? []) as AsyncIterable<Uint8Array>) {
        touch();
        parser.push(decoder.decode(chunk, { stream: true }));
        if (end) return end;
        on.read?.();
      }
    } catch (err) {
      // A usage error (no session) and an answer of the API's (a Failure) are final unless transient; anything else
      // is the connection failing.
      if (err instanceof UsageError || (err instanceof Failure && !isTransient(err))) throw err;
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      reason = silent ? `no data for ${idleMs / 1000} s` : `${(err as Error).message}${cause ? ` (${cause})` : ''}`;
    } finally {
      clearTimeout(idle);
      controller.abort();
    }
    if (progressed || (!silent && openedAt !== undefined && Date.now() - openedAt >= workedMs)) failures = 0;
    const delay = delays[failures++];
    if (delay === undefined) throw new Failure('stream_failed', `gave up following the run after ${failures} attempts in a row: ${reason}`);
    on.reconnecting(reason, delay);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
