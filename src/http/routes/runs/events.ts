import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import { z } from 'zod';
import { unavailableDependency } from '../../../dependencies';
import { notFound } from '../../../errors';
import { StoredContentMissing } from '../../../store/run-content';
import { entryCount, findRun, readEntries, type RunRecord } from '../../../store/runs';
import { isTerminal } from '../../../contract/constants';
import type { RunIdentity, RunStatus } from '../../../contract/types';
import type { AppDeps } from '../../deps';
import { parse } from '../../validate';
import type { RunReads } from './reads';
import { createRunWatches, type RunState } from './run-watch';

/**
 * Emitted on the Koa app by whoever stops serving it (src/server.ts): its open event streams end at once (without
 * `end`, so their clients reconnect, to another process, and resume), since a stream never finishes by itself.
 */
export const APP_CLOSING = 'closing';

/** `Last-Event-ID`: the id of the last entry event the client has (an entry's index in `results`). */
export const lastEventId = z
  .string()
  .regex(/^\d{1,15}$/, { error: 'expected the id of the last event received (the index of an entry: a whole number from 0)' })
  .transform(Number);

/** A closed run's entries are read, resolved and sent this many at a time (a page of the store). */
const CLOSED_BATCH = 32;
/** How soon a stream tries again to send what it could not resolve while the store did not answer. */
const PUMP_RETRY_MS = 1_000;

/** The data of `status` and `end` events: the run's status and `modified_at` as run reads format them. */
export interface RunStatusData {
  status: RunStatus;
  modified_at: string;
}
const statusData = (status: string, modifiedAt: Date | number) =>
  JSON.stringify({ status: status as RunStatus, modified_at: new Date(modifiedAt).toISOString() } satisfies RunStatusData);

/**
 * `GET <run path>/events`: the run as Server-Sent Events (docs/runs.md, "Following a run live"). `entry` events
 * (`id` = the entry's index in `results`, data = the entry as reads present it), `status` on each status change,
 * `end` once the run is closed, then the stream closes; a comment every EVENTS_HEARTBEAT_MS. A closed run streams
 * from its record at once; a live run from the watch all its streams in this process share (run-watch.ts).
 */
export function runEvents(deps: AppDeps, reads: Pick<RunReads, 'current' | 'resolve'>) {
  const { models } = deps.db;
  const { logger } = deps;
  const { resolve } = reads;
  const watches = createRunWatches({ models, logger }, reads, { cacheMs: deps.config.LIVE_RUN_CACHE_MS });
  /** The streams open now, ended when the app closes (`close`, on APP_CLOSING). */
  const streams = new Set<EventStream>();
  let closing = false;
  /** Opens `ctx`'s answer as an event stream, ended when it closes or the app does. */
  const open = (ctx: Context): EventStream => {
    const out = openEventStream(ctx, deps.config.EVENTS_HEARTBEAT_MS);
    streams.add(out);
    out.onClose(() => streams.delete(out));
    // A stream opened while the app closes (on a connection kept alive) ends at once: its client reconnects elsewhere.
    if (closing) out.end();
    return out;
  };

  /** After the stream opened nothing is mapped to a status any more: it is logged, and the stream closed. */
  const failed = (record: RunRecord, err: unknown) => {
    // Contents go before the record when a run is deleted: the stream of a run being deleted just ends.
    if (!(err instanceof StoredContentMissing)) logger.warn({ err, run: record._id }, 'a run stream failed; it was closed');
  };

  /** Every entry from `from` on, then `end`: a closed run never changes again. */
  const replayClosed = async (out: EventStream, record: RunRecord, from: number) => {
    const count = entryCount(record);
    for (let at = from; at < count && out.open; at += CLOSED_BATCH) {
      const entries = await resolve(await readEntries(models, record, at, Math.min(count, at + CLOSED_BATCH)));
      for (const [k, entry] of entries.entries()) await out.send('entry', JSON.stringify(entry), at + k);
    }
    await out.send('end', statusData(record.status, record.modified_at));
  };

  /** Follows a live run from entry `from` on, until it is closed, deleted, or the client leaves. */
  const follow = (out: EventStream, record: RunRecord, from: number) => {
    let next = from;
    let status: string | undefined;
    let pumping = false;
    let again = false;
    /** The text so far this stream has sent (`delta` events), and of which provider call. */
    let sent: { call: string; text: string } | undefined;
    /** The call whose text entries replaced: during a model call no entry comes, so new ones mean its answer is in. */
    let replaced: string | undefined;
    const pump = async (): Promise<void> => {
      if (pumping) {
        again = true;
        return;
      }
      pumping = true;
      try {
        do {
          again = false;
          const state: RunState | undefined = watch.state;
          if (!state || !out.open) return;
          if (state.end === 'deleted') return out.end();
          const entriesBefore = next;
          for (; next < state.count && out.open; next++) await out.send('entry', await watch.entryJson(next), next);
          if (next > entriesBefore && sent) replaced = sent.call;
          if (state.end === 'closed') {
            await out.send('end', statusData(state.status, state.modifiedAt));
            return out.end();
          }
          if (state.status !== status) {
            status = state.status;
            await out.send('status', statusData(state.status, state.modifiedAt));
          }
          // The text of a call whose entries came is not sent again (the worker deletes it after the record write).
          const text = watch.text?.call === replaced ? null : watch.text;
          // A retried call starts over, and a deleted text was replaced by the stored entry: the client drops its text.
          if (sent && (!text || text.call !== sent.call)) {
            sent = undefined;
            await out.send('delta', JSON.stringify({ reset: true }));
          }
          if (text && text.text !== '' && text.text !== sent?.text) {
            sent = { call: text.call, text: text.text };
            await out.send('delta', JSON.stringify({ text: text.text }));
          }
        } while (again && out.open);
      } catch (err) {
        // The store did not answer resolving an entry: the stream waits and tries again, as the watch does (ended
        // here, its client's reconnect would meet the same stall as a 503, which an EventSource does not retry).
        if (unavailableDependency(err) && out.open) {
          setTimeout(() => void pump(), PUMP_RETRY_MS);
          return;
        }
        failed(record, err);
        out.end();
      } finally {
        pumping = false;
      }
    };
    const watch = watches.join(record, () => void pump());
    out.onClose(() => watch.leave());
    void pump();
  };

  return {
    /** Ends every open stream, and any opened from now on (the app is closing: clients reconnect elsewhere). */
    close() {
      closing = true;
      for (const out of streams) out.end();
    },

    /**
     * Opens the stream of a run. Before it opens, errors answer as usual: 404 for no such run, 400 naming
     * `header.last-event-id` for a bad `Last-Event-ID`. Returns as soon as the stream is open (the answer time of a
     * stream is that of its first byte).
     */
    async stream(ctx: Context, id: RunIdentity): Promise<void> {
      const header = ctx.get('last-event-id').trim();
      const from = header === '' ? 0 : parse(lastEventId, header, 'header.last-event-id') + 1;
      const record = await findRun(models, id);
      if (!record) throw notFound(`run "${id.run}"`);
      const out = open(ctx);
      if (!out.open) return;
      if (!isTerminal(record.status)) return follow(out, record, from);
      void replayClosed(out, record, from)
        .catch((err: unknown) => failed(record, err))
        .finally(() => out.end());
    },
  };
}

type EventStream = ReturnType<typeof openEventStream>;

/**
 * Makes the answer an event stream: its headers, a first comment (so the status and headers go out at once), and a
 * comment every `heartbeatMs` so proxies do not close an idle stream. Koa pipes the body as it is written (nothing
 * in this app buffers or compresses it); `X-Accel-Buffering: no` asks nginx not to buffer it either.
 */
export function openEventStream(ctx: Context, heartbeatMs: number) {
  const body = new PassThrough();
  ctx.set('Content-Type', 'text/event-stream');
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Accel-Buffering', 'no');
  // The socket serves this stream for as long as it lasts: no idle timeout, events leave at once.
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.req.socket.setKeepAlive(true);
  ctx.status = 200;
  ctx.body = body;
  body.write(': run events\n\n');
  const open = () => !body.destroyed && !body.writableEnded;
  const heartbeat = setInterval(() => open() && body.write(': keep-alive\n\n'), heartbeatMs);
  const closers: Array<() => void> = [];
  // Koa destroys the body when the response finishes or the client goes: every timer and subscription ends here.
  body.once('close', () => {
    clearInterval(heartbeat);
    for (const close of closers.splice(0)) close();
  });
  return {
    get open() {
      return open();
    },
    /** Writes one event; resolves once the client can take more (or has gone). */
    async send(event: string, data: string, id?: number | string): Promise<void> {
      if (!open()) return;
      if (body.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          body.off('drain', done);
          body.off('close', done);
          resolve();
        };
        body.on('drain', done);
        body.on('close', done);
      });
    },
    /** An event with an id and no data, and the client's reconnection delay (SSE polling, SEP-1699). */
    prime(id: string, retryMs: number) {
      if (open()) body.write(`id: ${id}\nretry: ${retryMs}\ndata: \n\n`);
    },
    end() {
      clearInterval(heartbeat);
      if (open()) body.end();
    },
    /** `close` runs once the stream is closed (at once if it is already). */
    onClose(close: () => void) {
      if (body.closed) close();
      else closers.push(close);
    },
  };
}
