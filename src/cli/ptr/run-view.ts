import type { Context } from './context';
import { exampleAnswer, formFieldLines } from './input-form';
import type { RunStatusData } from '../../http/routes/runs/events';

/** Human output shows this much of a content; `--json` shows all of it. */
const CONTENT_SHOWN = 2000;

const indent = (text: string) => text.replace(/\n/g, '\n    ');

function contentText(content: unknown): string {
  const text = typeof content === 'string' ? content : JSON.stringify(content);
  if (text.length <= CONTENT_SHOWN) return text;
  return `${text.slice(0, CONTENT_SHOWN)}… (${text.length - CONTENT_SHOWN} more characters; --json shows all)`;
}

/** Which run an entry is of: its approval's decide command is then ready to paste. */
export interface RunWhere {
  profile: string;
  task: string;
  run: string;
}

/**
 * One result entry as lines (docs/runs.md, "The run object"): a log line (its level when warn or worse), a message
 * with its role and content, the last entry's answer or error, an approval waiting for a decision, an MCP server's
 * question waiting for an answer.
 */
export function entryLines(id: number, entry: any, where?: RunWhere): string[] {
  const head = `${String(id).padStart(3)} ${entry.level >= 50 ? 'error: ' : entry.level >= 40 ? 'warn: ' : ''}${entry.msg ?? ''}`;
  const lines = [head];
  if (entry.exchange) lines.push(`    ${entry.exchange.role}: ${indent(contentText(entry.exchange.content))}`);
  if (entry.lastMessage && !entry.error) lines.push(`    ${entry.lastMessage.role}: ${indent(contentText(entry.lastMessage.content))}`);
  if (entry.error) lines.push(`    error: ${indent(contentText(entry.error))}`);
  if (entry.approval) {
    lines.push(`    ${entry.approval.tool} ${contentText(entry.approval.arguments)}`);
    const profile = where && where.profile !== 'default' ? ` -p ${where.profile}` : '';
    const command = `ptr run approve ${where?.task ?? '<task>'} ${where?.run ?? '<run>'} ${entry.approval.id}${profile}`;
    lines.push(`    decide: ${command}   (or: ${command} --deny --reason TEXT)`);
  }
  if (entry.input) {
    lines.push(`    ${entry.input.tool} asks: ${indent(String(entry.input.message))}${entry.input.url ? `\n    at: ${entry.input.url}` : ''}`);
    const profile = where && where.profile !== 'default' ? ` -p ${where.profile}` : '';
    const command = `ptr run answer ${where?.task ?? '<task>'} ${where?.run ?? '<run>'} ${entry.input.id}${profile}`;
    const fields = formFieldLines(entry.input.schema);
    if (fields.length) lines.push('    fields:', ...fields.map((f) => `      ${f}`));
    const accept = entry.input.schema ? exampleAnswer(entry.input.schema) : '<json>';
    lines.push(`    answer: ${command} --accept '${accept}'   (or: --decline, --cancel)`);
  }
  return lines;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/**
 * What following a run prints, as events arrive. `--json`: one JSON object per line (`{"event": "entry", "id",
 * "entry"}`, `{"event": "status", ...}`, `{"event": "reconnecting", ...}`, `{"event": "end", ...}`). On a terminal:
 * the entries, under one status line redrawn in place (status, entries so far, time). Otherwise: the entries, and a
 * plain line at each status change.
 */
export function createRunView(ctx: Context, run: string, where?: RunWhere) {
  const out = ctx.stdout;
  const tty = !ctx.json && Boolean(out.isTTY);
  const started = Date.now();
  let status = 'pending';
  let entries = 0;
  let reason: string | undefined;
  let drawn = false;
  /** Not a terminal: a status change not printed yet, waiting for the entries written with it. */
  let held: RunStatusData | undefined;
  let heldEntries = 0;
  /** The answer's text printed so far (`delta` events), on a line not ended yet. */
  let shown = '';

  const statusText = () => `-- ${run}: ${status}${reason ? ` (${reason})` : ''} · ${entries} ${entries === 1 ? 'entry' : 'entries'} · ${seconds(Date.now() - started)}`;
  const clear = () => {
    if (drawn) out.write('\r\x1b[2K');
    drawn = false;
  };
  const draw = () => {
    if (!tty || shown) return;
    clear();
    out.write(statusText());
    drawn = true;
  };
  /** Ends the answer's text printed so far: what comes next goes under it. */
  const endText = () => {
    if (shown) out.write('\n');
    shown = '';
  };
  const lines = (text: string[]) => {
    clear();
    endText();
    out.write(`${text.join('\n')}\n`);
    draw();
  };
  const jsonLine = (doc: unknown) => out.write(`${JSON.stringify(doc)}\n`);
  const flush = () => {
    if (held) lines([`-- ${run}: ${held.status}`]);
    held = undefined;
  };
  const ticker = tty ? setInterval(draw, 1000) : undefined;
  ticker?.unref();

  return {
    /** Before the stream: what the trigger answered. */
    triggered(doc: { run: string; url: string; created: boolean }) {
      if (ctx.json) jsonLine({ event: 'triggered', ...doc });
      else lines([`${doc.created ? 'started' : 'already triggered (nothing started)'}: ${doc.url}`]);
    },
    entry(id: number, entry: any) {
      entries = id + 1;
      if (ctx.json) return jsonLine({ event: 'entry', id, entry });
      if (held) heldEntries++;
      lines(entryLines(id, entry, where));
    },
    status(next: RunStatusData) {
      status = next.status;
      reason = undefined;
      if (ctx.json) return jsonLine({ event: 'status', ...next });
      if (tty) return draw();
      // The stream sends a change before the entries that come with it (the run's start, its prompt): the line waits
      // for them, as docs/cli.md shows it.
      flush();
      held = next;
      heldEntries = 0;
    },
    /** The answer as it is written: its new part printed (the stored entry follows it). */
    delta(delta: { text?: string; reset?: boolean }) {
      if (ctx.json) return jsonLine(delta.reset ? { event: 'delta', reset: true } : { event: 'delta', text: delta.text ?? '' });
      if (delta.reset || typeof delta.text !== 'string') {
        endText();
        return draw();
      }
      clear();
      if (!delta.text.startsWith(shown)) endText();
      out.write(delta.text.slice(shown.length));
      shown = delta.text;
    },
    /** The end of what the stream brought in one read: a waiting status line goes under the entries it brought. */
    read() {
      if (held && heldEntries > 0) flush();
    },
    reconnecting(why: string, delayMs: number) {
      if (ctx.json) return jsonLine({ event: 'reconnecting', reason: why, delay_ms: delayMs });
      reason = `reconnecting: ${why}`;
      if (tty) return draw();
      flush();
      lines([`-- ${run}: reconnecting in ${seconds(delayMs)}: ${why}`]);
    },
    end(end: RunStatusData) {
      if (ticker) clearInterval(ticker);
      status = end.status;
      reason = undefined;
      if (ctx.json) return jsonLine({ event: 'end', ...end });
      if (held?.status === end.status) held = undefined;
      flush();
      clear();
      endText();
      out.write(`-- ${run}: ${end.status} (${entries} ${entries === 1 ? 'entry' : 'entries'})\n`);
    },
    /** Leaves the terminal clean when following stops without an end (an error, Ctrl-C). */
    close() {
      if (ticker) clearInterval(ticker);
      clear();
    },
  };
}
