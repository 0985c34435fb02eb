/**
 * The `long` part: one run of 50 turns whose tool (a real servlet, test/fixtures/servlets/bulk.wat) answers 100 KiB
 * per call, to show whether a turn late in a run costs what an early one does: history bytes and CPU per turn,
 * turns 1–10 against 41–50. The provider request is reported beside them: the provider's wire format carries the
 * whole conversation every time, so it grows with the run whatever we store.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { setTimeout as sleep } from 'node:timers/promises';
import { runWorkflowId } from '../src/temporal/ids';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../test/helpers/fake-provider';
import { buildTestServlets } from '../test/helpers/servlets';
import type { runTask } from '../workflows/run-task';
import { cpuSeconds, round } from './measure';
import type { PartDeps } from './stack';

const TURNS = 50;
const TOOL_KIB = 100;
/** Turns compared at each end of the run. */
const WINDOW = 10;
/** A short run first, so the measured one does not pay the servlet's compilation and the first calls' warm-up. */
const WARMUP_TURNS = 3;
/** A profile of its own: tools are per profile, so the other parts' runs never see this one. */
const PROFILE = 'long';
const TASK = 'long';
/** The long task's prompt begins so: how the fake tells its requests from the other parts' (the run name follows). */
const PROMPT_MARK = 'Long run:';
const MEASURED = 'long-1';
/** Within this of the first turns' mean, a figure counts as flat. */
const FLAT = 0.2;

export interface Span {
  mean: number;
  max: number;
}
export interface Compared {
  first: Span;
  last: Span;
  /** Mean of the last turns over the mean of the first (NaN when the first is 0). */
  ratio: number;
}
export interface LongRunFigures {
  turns: number;
  toolKib: number;
  /** Which turns `first` and `last` are, as printed. */
  firstTurns: string;
  lastTurns: string;
  historyBytesPerTurn: Compared;
  /** Per process of the stack (worker, api, ferretdb, temporal). */
  cpuMsPerTurn: Record<string, Compared>;
  wallMsPerTurn: Compared;
  providerRequestKibPerTurn: Compared;
  /**
   * Per process, CPU ms per turn as `base + perMiB × provider request MiB`, least squares over every turn: how much of
   * any growth goes with the request the provider's wire format makes grow.
   */
  cpuMsPerRequestMiB: Record<string, { base: number; perMiB: number }>;
  history: { bytes: number; events: number; executions: number; continuedAsNew: boolean; beforeFirstTurnBytes: number; finalAnswerBytes: number };
  verdict: { historyBytes: string; workerCpu: string };
}

interface Sample {
  at: number;
  cpu: Record<string, number>;
  requestBytes: number;
}

export async function benchLongRun({ stack, api, pids, otherwise, log }: PartDeps): Promise<LongRunFigures> {
  const signed = await setUp(api);
  const samples: Sample[] = [];
  const calls = new Map<string, number>();
  stack.fake.script((req) => {
    // The sample first: the turn ends when the worker has sent the next request.
    const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
    const text = lastUserText(req);
    if (!text.startsWith(PROMPT_MARK)) return otherwise(req);
    const run = text.slice(PROMPT_MARK.length).trim();
    const n = (calls.get(run) ?? 0) + 1;
    calls.set(run, n);
    if (run === MEASURED) samples.push({ at: performance.now(), cpu, requestBytes: requestBytes(req) });
    const turns = run === MEASURED ? TURNS : WARMUP_TURNS;
    return n <= turns ? openaiToolCall([{ id: `call_${n}`, name: 'big__bulk', arguments: { n } }]) : openaiText(`read ${n - 1} results`);
  });
  const before = stack.fake.requests.length;
  try {
    log(`  warm-up run of ${WARMUP_TURNS} turns...`);
    await runToReady(stack.client, api, signed, 'long-warm');
    log(`  the measured run: ${TURNS} turns of ${TOOL_KIB} KiB tool answers...`);
    await runToReady(stack.client, api, signed, MEASURED);
  } finally {
    stack.fake.script(otherwise);
    // The fake keeps every request it parsed; these hold up to 5 MB each and nothing else reads them.
    stack.fake.requests.splice(before);
  }
  if (samples.length < TURNS + 1) throw new Error(`the fake saw ${samples.length} model requests of the measured run, expected ${TURNS + 1}`);

  // Turn k: from its model request to the next one (its tool call, the record, the next call's reading and sending).
  const turns = samples.slice(0, TURNS).map((s, k) => ({ from: s, to: samples[k + 1]! }));
  const history = await historyPerTurn(stack.client, workflowId(MEASURED));
  const historyBytesPerTurn = compare(history.turnBytes.slice(0, TURNS));
  const cpuMs = Object.fromEntries(Object.keys(pids).map((k) => [k, turns.map((t) => (t.to.cpu[k]! - t.from.cpu[k]!) * 1000)]));
  const cpuMsPerTurn = Object.fromEntries(Object.entries(cpuMs).map(([k, xs]) => [k, compare(xs)]));
  const requestMiB = samples.slice(0, TURNS).map((s) => s.requestBytes / 2 ** 20);
  // The whole series, for a reader who wants the shape (a step, a slope, one outlier) rather than two means.
  log(`  history bytes per turn: ${history.turnBytes.slice(0, TURNS).join(' ')}`);
  for (const [k, xs] of Object.entries(cpuMs)) log(`  ${k} CPU ms per turn: ${xs.map((x) => Math.round(x)).join(' ')}`);
  log(`  provider request MiB per turn: ${requestMiB.map((x) => round(x, 2)).join(' ')}`);
  return {
    turns: TURNS,
    toolKib: TOOL_KIB,
    firstTurns: `1–${WINDOW}`,
    lastTurns: `${TURNS - WINDOW + 1}–${TURNS}`,
    historyBytesPerTurn,
    cpuMsPerTurn,
    wallMsPerTurn: compare(turns.map((t) => t.to.at - t.from.at)),
    providerRequestKibPerTurn: compare(requestMiB.map((x) => x * 1024)),
    cpuMsPerRequestMiB: Object.fromEntries(Object.entries(cpuMs).map(([k, xs]) => [k, fit(requestMiB, xs)])),
    history: {
      bytes: history.bytes,
      events: history.events,
      executions: history.executions,
      continuedAsNew: history.continuedAsNew,
      beforeFirstTurnBytes: history.beforeFirstTurnBytes,
      finalAnswerBytes: history.turnBytes[TURNS] ?? NaN,
    },
    verdict: { historyBytes: verdict(historyBytesPerTurn), workerCpu: verdict(cpuMsPerTurn.worker!) },
  };
}

const workflowId = (run: string) => runWorkflowId({ owner: 'bench', profile: PROFILE, task: TASK, run });

/** Publishes the bulk servlet, installs it as `big` in a profile of its own with a task there: the task's signed URL. */
async function setUp(api: PartDeps['api']): Promise<string> {
  const { bulk } = await buildTestServlets();
  const json = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) });
  await expectStatus(api('/api/servlets/~/bulk', { method: 'PUT', headers: { 'content-type': 'application/wasm' }, body: bulk }), 'publishing the bulk servlet');
  await expectStatus(api(`/api/profiles/~/${PROFILE}`, json({ description: '', is_public: false })), `creating the profile ${PROFILE}`);
  const install = { servlet_slug: 'bench/bulk', name: 'big', settings: { config: { kib: String(TOOL_KIB) } } };
  await expectStatus(api(`/api/profiles/~/${PROFILE}/installations`, json(install)), 'installing the bulk servlet');
  const task = { runner: 'openai', openai: { prompt: `${PROMPT_MARK} {{ text }}`, model: 'bench' }, settings: { key: 'sk-bench-task-key' } };
  await expectStatus(api(`/api/tasks/~/${PROFILE}/${TASK}`, { method: 'PUT', body: JSON.stringify(task) }), 'creating the long task');
  const res = await expectStatus(api(`/api/tasks/~/${PROFILE}/${TASK}/signed`, { method: 'POST' }), 'signing the long task');
  return ((await res.json()) as { url: string }).url;
}

/** Throws with the answer's text unless its status is 200 or 201. */
async function expectStatus(pending: Promise<Response>, what: string): Promise<Response> {
  const res = await pending;
  if (res.status !== 200 && res.status !== 201) throw new Error(`${what} answered ${res.status}: ${await res.text()}`);
  return res;
}

/** Triggers a run of the long task named `run` and waits for its end; throws with the run's last entry unless ready. */
async function runToReady(client: Client, api: PartDeps['api'], signed: string, run: string): Promise<void> {
  await (await expectStatus(fetch(signed, { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': run }, body: JSON.stringify({ text: run }) }), `triggering ${run}`)).arrayBuffer();
  const outcome = await client.workflow.getHandle<typeof runTask>(workflowId(run)).result();
  if (outcome.status === 'ready') return;
  const record = (await (await api(`/api/runs/bench/${PROFILE}/${TASK}/${run}`)).json()) as { results?: unknown[] };
  throw new Error(`the run ${run} ended ${outcome.status}: ${JSON.stringify(record.results?.at(-1)).slice(0, 500)}`);
}

/** Bytes of the request body as sent (the fake has it parsed; re-encoding it is the fallback). */
function requestBytes(req: RecordedRequest): number {
  const length = Number(req.headers['content-length']);
  return Number.isFinite(length) && length > 0 ? length : Buffer.byteLength(JSON.stringify(req.body));
}

/**
 * Protobuf bytes of each turn of a run's history, across every execution if it continued as new: a turn runs from
 * the scheduling of one `callModel` to the next, so the last is the final answer's (and the close). The events
 * before the first model call (start, prepare) are apart.
 */
async function historyPerTurn(client: Client, id: string) {
  const executions = await executionsOf(client, id);
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let bytes = 0;
  let length = 0;
  for (const execution of executions) {
    const handle = client.workflow.getHandle(id, execution.runId);
    events.push(...((await handle.fetchHistory()).events ?? []));
    const description = await handle.describe();
    bytes += description.historySize ?? NaN;
    length += description.historyLength;
  }
  const size = (e: temporal.api.history.v1.IHistoryEvent) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
  const sum = (from: number, to: number) => events.slice(from, to).reduce((n, e) => n + size(e), 0);
  const starts = events.flatMap((e, i) => (['firstModelCall', 'callModel', 'prepareAndCallModel'].includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? '') ? [i] : []));
  return {
    turnBytes: starts.map((start, k) => sum(start, starts[k + 1] ?? events.length)),
    beforeFirstTurnBytes: sum(0, starts[0] ?? 0),
    bytes,
    events: length,
    executions: executions.length,
    continuedAsNew: executions.some((e) => e.status === 'CONTINUED_AS_NEW'),
  };
}

/** The executions of a workflow id, oldest first, once visibility lists the one that completed (it may lag). */
async function executionsOf(client: Client, id: string): Promise<Array<{ runId: string; status: string; start: number }>> {
  for (let attempt = 1; ; attempt++) {
    const found: Array<{ runId: string; status: string; start: number }> = [];
    for await (const w of client.workflow.list({ query: `WorkflowId = "${id}"` })) found.push({ runId: w.runId, status: w.status.name, start: w.startTime.getTime() });
    if (found.some((e) => e.status === 'COMPLETED') || attempt === 50) return found.sort((a, b) => a.start - b.start);
    await sleep(200);
  }
}

function compare(perTurn: number[]): Compared {
  const span = (xs: number[]): Span => ({ mean: round(xs.reduce((a, b) => a + b, 0) / xs.length), max: round(Math.max(...xs)) });
  const first = span(perTurn.slice(0, WINDOW));
  const last = span(perTurn.slice(-WINDOW));
  return { first, last, ratio: first.mean > 0 ? round(last.mean / first.mean, 2) : NaN };
}

/** Least squares `y = base + perMiB × x`. */
function fit(x: number[], y: number[]): { base: number; perMiB: number } {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const mx = mean(x);
  const my = mean(y);
  const slope = x.reduce((n, xi, i) => n + (xi - mx) * (y[i]! - my), 0) / x.reduce((n, xi) => n + (xi - mx) ** 2, 0);
  return { base: round(my - slope * mx), perMiB: round(slope) };
}

const verdict = (c: Compared) => (Math.abs(c.ratio - 1) <= FLAT ? `flat (${c.ratio}×)` : Number.isNaN(c.ratio) ? 'n/a' : `${c.ratio}×`);

/** The part's small table and verdict line, for bench/run.ts's output. */
export function printLongRun(r: LongRunFigures) {
  const span = (s: Span) => `${s.mean} / ${s.max}`;
  const ratio = (c: Compared) => (Number.isNaN(c.ratio) ? '—' : `${c.ratio}×`);
  const rows: string[][] = [
    ['history bytes (protobuf)', span(r.historyBytesPerTurn.first), span(r.historyBytesPerTurn.last), ratio(r.historyBytesPerTurn)],
    ...Object.entries(r.cpuMsPerTurn).map(([k, c]) => [`CPU ms, ${k}`, span(c.first), span(c.last), ratio(c)]),
    ['wall ms', span(r.wallMsPerTurn.first), span(r.wallMsPerTurn.last), ratio(r.wallMsPerTurn)],
    ['provider request KiB', span(r.providerRequestKibPerTurn.first), span(r.providerRequestKibPerTurn.last), ratio(r.providerRequestKibPerTurn)],
  ];
  const header = ['per turn (mean / max)', `turns ${r.firstTurns}`, `turns ${r.lastTurns}`, 'ratio of means'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const h = r.history;
  console.log(`\nLong run: ${r.turns} turns, the tool answering ${r.toolKib} KiB each (CPU from /proc, 10 ms ticks)\n`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  console.log(
    `\nWhole run: historySize ${h.bytes} bytes, historyLength ${h.events} events, ${h.executions} execution(s), ` +
      `${h.continuedAsNew ? 'continued as new' : 'did not continue as new'}; before the first turn ${h.beforeFirstTurnBytes} bytes, final answer turn ${h.finalAnswerBytes} bytes`,
  );
  const fits = Object.entries(r.cpuMsPerRequestMiB).map(([k, f]) => `${k} ${f.base} + ${f.perMiB}/MiB`);
  console.log(`CPU ms per turn against the provider request's size (least squares): ${fits.join('; ')}`);
  console.log(`Verdict (turns ${r.lastTurns} against ${r.firstTurns}): history bytes per turn ${r.verdict.historyBytes}; worker CPU per turn ${r.verdict.workerCpu}`);
}
