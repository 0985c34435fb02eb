import type { Context } from './context';
import type { RunStatusData } from '../../http/routes/runs/events';

/** Human output shows this much of a content; `--json` shows all of it. */
const CONTENT_SHOWN = 2000;

const indent = (text: string) => text.replace(/\n/g, '\n    ');

function contentText(content: unknown): string {
  const text = typeof content === 'string' ? content : JSON.stringify(content);
  if (text.length <= CONTENT_SHOWN) return text;
  return `${text.slice(0, CONTENT_SHOWN)}… (${text.length - CONTENT_SHOWN} more characters; --json shows all)`;
}

/**
 * One result entry as lines (docs/runs.md, "The run object"): a log line (its level when warn or worse), a message
 * with its role and content, the last entry's answer or error, an approval waiting for a decision.
 */
export function entryLines(id: number, entry: any): string[] {
  const head = `${String(id).padStart(3)} ${entry.level >= 50 ? 'error: ' : entry.level >= 40 ? 'warn: ' : ''}${entry.msg ?? ''}`;
  const lines = [head];
  if (entry.exchange) lines.push(`    ${entry.exchange.role}: ${indent(contentText(entry.exchange.content))}`);
  if (entry.lastMessage && !entry.error) lines.push(`    ${entry.lastMessage.role}: ${indent(contentText(entry.lastMessage.content))}`);
  if (entry.error) lines.push(`    error: ${indent(contentText(entry.error))}`);
  if (entry.approval) {
    lines.push(`    ${entry.approval.tool} ${contentText(entry.approval.arguments)}`);
    lines.push(`    decide: ptr run approve <task> <run> ${entry.approval.id} [--deny]`);
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
export function createRunView(ctx: Context, run: string) {
  const out = ctx.stdout;
  const tty = !ctx.json && Boolean(out.isTTY);
  const started = Date.now();
  let status = 'pending';
  let entries = 0;
  let reason: string | undefined;
  let drawn = false;

  const statusText = () => `-- ${run}: ${status}${reason ? ` (${reason})` : ''} · ${entries} ${entries === 1 ? 'entry' : 'entries'} · ${seconds(Date.now() - started)}`;
  const clear = () => {
    if (drawn) out.write('\r\x1b[2K');
    drawn = false;
  };
  const draw = () => {
    if (!tty) return;
    clear();
    out.write(statusText());
    drawn = true;
  };
  const lines = (text: string[]) => {
    clear();
    out.write(`${text.join('\n')}\n`);
    draw();
  };
  const jsonLine = (doc: unknown) => out.write(`${JSON.stringify(doc)}\n`);
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
      lines(entryLines(id, entry));
    },
    status(next: RunStatusData) {
      status = next.status;
      reason = undefined;
      if (ctx.json) jsonLine({ event: 'status', ...next });
      else if (tty) draw();
      else lines([`-- ${run}: ${status}`]);
    },
    reconnecting(why: string, delayMs: number) {
      if (ctx.json) return jsonLine({ event: 'reconnecting', reason: why, delay_ms: delayMs });
      reason = `reconnecting: ${why}`;
      if (tty) draw();
      else lines([`-- ${run}: reconnecting in ${seconds(delayMs)}: ${why}`]);
    },
    end(end: RunStatusData) {
      if (ticker) clearInterval(ticker);
      status = end.status;
      reason = undefined;
      if (ctx.json) return jsonLine({ event: 'end', ...end });
      clear();
      out.write(`-- ${run}: ${end.status} (${entries} ${entries === 1 ? 'entry' : 'entries'})\n`);
    },
    /** Leaves the terminal clean when following stops without an end (an error, Ctrl-C). */
    close() {
      if (ticker) clearInterval(ticker);
      clear();
    },
  };
}
