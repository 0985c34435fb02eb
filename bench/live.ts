/**
 * The `live` part's streams: 10 event streams (`GET <run path>/events`) on each of the live runs the part's pollers
 * polled, held for as long as the polls were measured, and the Temporal queries the API sent meanwhile per live run
 * per second, beside the polls' figure. The streams stay open until the runs close, and each must then get `end`.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSseParser } from '../src/cli/ptr/sse';
import { percentile, round } from './measure';

export interface LiveStreamsDeps {
  apiUrl: string;
  /** The bench user's session cookie header. */
  headers: Record<string, string>;
  /** The live runs' paths. */
  runs: string[];
  perRun: number;
  /** How long the queries are counted (the polls' window). */
  seconds: number;
  /** The API's `ptr_live_run_queries_total`. */
  queries: () => Promise<number>;
  log: (msg: string) => void;
}

export interface LiveStreamFigures {
  streams: number;
  liveRuns: number;
  seconds: number;
  queriesPerLiveRunPerSecond: number;
  /** From the request to the stream's first event (the run's status), p99. */
  firstEventP99Ms: number;
}

export interface OpenStream {
  firstEventMs?: number;
  ended: boolean;
  /** `delta` events (the answer's text so far) received. */
  deltas: number;
  closed: Promise<void>;
  close(): void;
}

/** One stream, read as an EventSource would (only what the bench counts: the first event, `delta`s, and `end`). */
export function openStream(url: string, headers: Record<string, string>, agent: http.Agent): OpenStream {
  const t0 = performance.now();
  let request: http.ClientRequest | undefined;
  const stream: OpenStream = { ended: false, deltas: 0, closed: Promise.resolve(), close: () => request?.destroy() };
  stream.closed = new Promise<void>((resolve) => {
    request = http.get(url, { agent, headers: { ...headers, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve();
        return;
      }
      const parser = createSseParser(({ event }) => {
        if (stream.firstEventMs === undefined) stream.firstEventMs = performance.now() - t0;
        if (event === 'end') stream.ended = true;
        if (event === 'delta') stream.deltas++;
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.push(chunk));
      res.on('close', () => resolve());
    });
    request.on('error', () => resolve());
  });
  return stream;
}

/** Opens the streams and counts the queries over `seconds`; `finish` waits (at most `timeoutMs`) for their `end`. */
export async function benchLiveStreams(deps: LiveStreamsDeps) {
  const { apiUrl, headers, runs, perRun, seconds, queries, log } = deps;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const streams = runs.flatMap((run) => Array.from({ length: perRun }, () => openStream(`${apiUrl}${run}/events`, headers, agent)));
  const opening = performance.now();
  while (streams.some((s) => s.firstEventMs === undefined)) {
    if (performance.now() - opening > 30_000) throw new Error(`${streams.filter((s) => s.firstEventMs === undefined).length} streams had no event after 30 s`);
    await sleep(50);
  }
  // The streams' watches are under way: from here on, the queries they cost.
  await sleep(1_000);
  log(`  ${streams.length} streams open on ${runs.length} live runs; counting the API's queries for ${seconds} s...`);
  const before = await queries();
  await sleep(seconds * 1000);
  const sent = (await queries()) - before;
  const figures: LiveStreamFigures = {
    streams: streams.length,
    liveRuns: runs.length,
    seconds,
    queriesPerLiveRunPerSecond: round(sent / runs.length / seconds, 2),
    firstEventP99Ms: round(percentile(streams.map((s) => s.firstEventMs!), 99)),
  };
  return {
    figures,
    /** Once the runs were let go: how many streams got `end` (and closed) within `timeoutMs`; the rest are closed. */
    async finish(timeoutMs = 60_000): Promise<number> {
      await Promise.race([Promise.all(streams.map((s) => s.closed)), sleep(timeoutMs)]);
      for (const s of streams) s.close();
      agent.destroy();
      return streams.filter((s) => s.ended).length;
    },
  };
}
