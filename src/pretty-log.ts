import { Writable } from 'node:stream';

/** pino's numeric levels, as a reader names them. */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Fields every line has, or shown in the line's head rather than as `key=value`. */
const HEAD = new Set(['level', 'time', 'pid', 'hostname', 'name', 'component', 'msg', 'run', 'workflowId']);

/** A run's workflow id without its `run/` prefix: `alice/default/haiku/r1`. */
const runOf = (value: unknown) => (typeof value === 'string' ? value.replace(/^run\//, '') : undefined);

function valueText(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string') {
    const { type, message } = value as { type?: unknown; message: string };
    return JSON.stringify(`${typeof type === 'string' && type ? `${type}: ` : ''}${message}`);
  }
  return JSON.stringify(value);
}

/**
 * One pino JSON line as one readable line: time, level, the run (when the entry is about one), who logged it, the
 * message, then the other fields as `key=value` (an error as its type and message, without its stack). A line that
 * is not a JSON object is returned as it is.
 */
export function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line);
  } catch {
    return line;
  }
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return line;
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 19) : '';
  const level = (LEVELS[entry.level as number] ?? String(entry.level ?? '')).padEnd(5);
  const run = runOf(entry.run) ?? runOf(entry.workflowId);
  const who = [entry.name, entry.component].filter((part) => typeof part === 'string').join('/');
  const rest = Object.entries(entry)
    .filter(([key, value]) => !HEAD.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${valueText(value)}`);
  const head = [time, level, run ? `[${run}]` : '', who ? `${who}:` : '', typeof entry.msg === 'string' ? entry.msg : ''];
  return [...head, ...rest].filter(Boolean).join(' ');
}

/** A stream for pino's output that writes each line to `out` through prettyLine. */
export function prettyStream(out: NodeJS.WritableStream): Writable {
  let partial = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      const text = lines.filter(Boolean).map(prettyLine).join('\n');
      if (text) out.write(`${text}\n`);
      done();
    },
  });
}
