import { createSseParser } from '../../src/cli/ptr/sse';
import { getStack } from './stack';

/** One event as a client parses it (`comment` for `: …` lines). */
export interface StreamEvent {
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

/**
 * A run's event stream read as an EventSource would: `events` fills as blocks arrive, `closed` resolves when the
 * server ends the stream (or `abort` cuts it).
 */
export async function openEvents(sessionId: string | undefined, runPath: string, options: { baseUrl?: string; lastEventId?: string } = {}) {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (sessionId) headers.cookie = `sessionId=${sessionId}`;
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const res = await fetch(`${options.baseUrl ?? getStack().apiUrl}${runPath}/events`, { headers, signal: controller.signal });
  const events: StreamEvent[] = [];
  let ended = false;
  let cut: Error | undefined;
  const read = async () => {
    if (!res.ok || !res.body) return;
    const decoder = new TextDecoder();
    const parser = createSseParser((event) => events.push(event), { onComment: (comment) => events.push({ comment }) });
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.push(decoder.decode(chunk, { stream: true }));
      ended = true;
    } catch (err) {
      // A connection the server's process dropped (a test's own stack stopping under a stream a failed test left
      // open): the stream ended without its end, which `ended()` says; never an unhandled rejection.
      if ((err as Error).name !== 'AbortError') cut = err as Error;
    }
  };
  const closed = read();
  return {
    res,
    events,
    closed,
    /** Whether the server ended the stream (not a cut of ours, nor a dropped connection). */
    ended: () => ended,
    /** How the connection was lost, when it was (not by `abort`). */
    cut: () => cut,
    entries: () => events.filter((e) => e.event === 'entry'),
    abort: () => controller.abort(),
  };
}
