import { Writable } from 'node:stream';

/** Captures every log line a component writes, so tests can read the logs as an operator would. */
export class LogSink extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void) {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    cb();
  }
  text() {
    return this.lines.join('\n');
  }
}
