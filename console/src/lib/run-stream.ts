import { useEffect, useRef, useState } from 'preact/hooks';
import type { Entry } from '../api/types';

export interface RunStream {
  entries: Entry[];
  /** The status as the stream last said, if it has said one. */
  status?: string;
  /** The model's answer so far, while it writes one (`delta` events); empty otherwise. */
  writing: string;
  ended: boolean;
  /** Set when the stream could not be opened or was lost for good (the run deleted, the session gone). */
  problem?: string;
  /** Bumped on every `status` and `end`, for what reads the run again then. */
  changes: number;
}

/** The text a `delta` event carries: `{"text"}` (or `content`, `delta`), or the data itself; `reset` empties it. */
function deltaText(data: string): string {
  try {
    const parsed = JSON.parse(data) as unknown;
    if (typeof parsed === 'string') return parsed;
    if (parsed && typeof parsed === 'object') {
      const d = parsed as { reset?: boolean; text?: unknown; content?: unknown; delta?: unknown };
      if (d.reset) return '';
      const text = d.text ?? d.content ?? d.delta;
      return typeof text === 'string' ? text : '';
    }
  } catch {
    return data;
  }
  return '';
}

/**
 * Follows `GET <run path>/events` (docs/runs.md, "Following a run live"): entries in order by their ids, each once
 * (the browser reconnects by itself with Last-Event-ID), `status`, `end`, and `delta` for the text being written.
 * Many entries at once (a long closed run) cost one render: they are gathered and shown on the next frame.
 */
export function useRunStream(runPath: string): RunStream {
  const entries = useRef<Entry[]>([]);
  const [state, setState] = useState<Omit<RunStream, 'entries'>>({ writing: '', ended: false, changes: 0 });
  const [, setVersion] = useState(0);

  useEffect(() => {
    entries.current = [];
    const source = new EventSource(`${runPath}/events`);
    let frame = 0;
    const show = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
      });
    };
    source.addEventListener('entry', (event) => {
      const id = Number((event as MessageEvent).lastEventId);
      const entry = JSON.parse((event as MessageEvent).data as string) as Entry;
      if (Number.isInteger(id) && id >= 0) entries.current[id] = entry;
      else entries.current.push(entry);
      // The stored message replaces the text written so far.
      setState((s) => (s.writing ? { ...s, writing: '' } : s));
      show();
    });
    source.addEventListener('delta', (event) => {
      const writing = deltaText((event as MessageEvent).data as string);
      setState((s) => ({ ...s, writing }));
    });
    source.addEventListener('status', (event) => {
      const { status } = JSON.parse((event as MessageEvent).data as string) as { status: string };
      setState((s) => ({ ...s, status, problem: undefined, changes: s.changes + 1 }));
    });
    source.addEventListener('end', (event) => {
      const { status } = JSON.parse((event as MessageEvent).data as string) as { status: string };
      source.close();
      setState((s) => ({ ...s, status, ended: true, writing: '', changes: s.changes + 1 }));
    });
    source.onerror = () => {
      // CONNECTING: the browser tries again by itself. CLOSED: it gave up (a 404, a 401): say so.
      if (source.readyState === EventSource.CLOSED) setState((s) => ({ ...s, problem: 'The run’s live stream closed; reload the page to follow it again.' }));
    };
    return () => {
      source.close();
      cancelAnimationFrame(frame);
    };
  }, [runPath]);

  return { ...state, entries: entries.current };
}
