/**
 * Splits a Server-Sent Events byte stream into events (a blank line ends one; CR, LF and CRLF all end lines), so the
 * transport can bound each event's size and read the messages of a call's stream. Pure: no I/O.
 */
export class SseEventSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private atLineStart = true;
  private lastWasCr = false;

  /** Bytes of the event not yet complete. */
  get pendingBytes(): number {
    return this.size;
  }

  /** The events this chunk completes, each without its final blank line. */
  push(chunk: Buffer): Buffer[] {
    const events: Buffer[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (b === LF && this.lastWasCr) {
        // the LF of a CRLF: the line already ended at its CR
        this.lastWasCr = false;
        if (i === start) start = i + 1;
        continue;
      }
      if (b === LF || b === CR) {
        this.lastWasCr = b === CR;
        if (this.atLineStart) {
          this.parts.push(chunk.subarray(start, i));
          this.size += i - start;
          if (this.size > 0) events.push(Buffer.concat(this.parts, this.size));
          this.parts = [];
          this.size = 0;
          start = i + 1;
        } else {
          this.atLineStart = true;
        }
        continue;
      }
      this.atLineStart = false;
      this.lastWasCr = false;
    }
    if (start < chunk.length) {
      this.parts.push(chunk.subarray(start));
      this.size += chunk.length - start;
    }
    return events;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** The `data` of one event (its `data:` lines joined), or undefined when it has none (a comment, a priming event: the SDK skips those too). */
export function eventData(event: Buffer): string | undefined {
  const lines = event.toString('utf8').split(/\r\n|\r|\n/);
  const data: string[] = [];
  for (const line of lines) {
    if (line === 'data' || line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  const joined = data.join('\n');
  return joined === '' ? undefined : joined;
}
