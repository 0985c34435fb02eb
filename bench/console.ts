/**
 * The `console` part (issue 32): (1) a closed run of about 2,000 entries opened in headless Chromium at
 * `/console/runs/<profile>/<task>/<run>`, timed from navigation start to usable, 5 loads each in a fresh browser
 * context; (2) the time from the fake model sending its answer's first piece to that text on the run page
 * (console-text.ts); (3) runs whose fake model streams its answer slowly, each followed by an event stream (which gets
 * the text so far as `delta` events), beside the same number unfollowed, in interleaved rounds: the API's and the
 * database's CPU per run.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser } from 'playwright-core';
import pLimit from 'p-limit';
import { runWorkflowId } from '../src/temporal/ids';
import { testEnv } from '../test/helpers/env';
import { buildTestServlets } from '../test/helpers/servlets';
import { lastUserText, openaiText, openaiToolCall } from '../test/helpers/fake-provider';
import { firstTokenProbe, printFirstToken, type FirstTokenFigures } from './console-text';
import { openStream } from './live';
import { cpuSeconds, percentile, round } from './measure';
import { settle, trigger } from './slow-phase';
import type { PartDeps } from './stack';

const PROFILE = 'console';
const TASK = 'console';
const PROMPT_MARK = 'Console bench:';
/** 40 turns of 25 greeter calls: 2 entries per call, with the start, the prompt and the answer 2,003 entries. */
const TURNS = 40;
const CALLS_PER_TURN = 25;
const LONG_RUN = 'long-2000';
const LOADS = 5;
const TARGET_MS = 1000;
/**
 * The followed and unfollowed runs' model waits this (so that the worker has read that a followed run is followed:
 * it reads who follows once a second), then streams its answer in PIECES pieces PIECE_GAP_MS apart.
 */
const HOLD_MS = 2_000;
const PIECES = 10;
const PIECE_GAP_MS = 200;
const ROUND = 200;
/** Followed (F) and unfollowed (U) rounds, so that a drift of the machine hits both alike. */
const ORDER = ['followed', 'unfollowed', 'unfollowed', 'followed'] as const;

export interface ConsoleFigures {
  runPage: { entries: number; loadsMs: number[]; medianMs: number; maxMs: number; targetMs: number; met: boolean; usable: string; firstEntryMedianMs: number; streamToEndMs: number[]; allEntriesMedianMs: number; rendersAddingEntries: number[] };
  firstToken: FirstTokenFigures;
  followed: {
    runsPerRound: number;
    rounds: Array<{ side: string; seconds: number; streamsEnded?: number }>;
    /** The model's answer: held `holdMs`, then `pieces` pieces `pieceGapMs` apart. */
    model: { holdMs: number; pieces: number; pieceGapMs: number };
    cpuMsPerRun: { followed: Record<string, number>; unfollowed: Record<string, number> };
    /** `delta` events per followed run's stream: median, fewest, and the streams that got none. */
    deltas: { median: number; min: number; streamsWithout: number };
  };
}

export const USABLE = 'the status element (role=status) says ready, the last entry is in the DOM and "Delete run" is enabled';

export async function benchConsole(deps: PartDeps & { session: string }): Promise<ConsoleFigures> {
  const { stack, api, otherwise, log } = deps;
  const signed = await setUp(api);
  const firstToken = firstTokenProbe();
  stack.fake.script(async (req) => {
    const text = lastUserText(req);
    if (!text.startsWith(PROMPT_MARK)) return otherwise(req);
    const run = text.slice(PROMPT_MARK.length).trim();
    if (firstToken.owns(run)) return firstToken.answer(run);
    if (run !== LONG_RUN) {
      await sleep(HOLD_MS);
      const pieces = Array.from({ length: PIECES }, (_, i) => `piece ${i + 1} of ${run}. `);
      return { ...openaiText(pieces.join('')), chunks: pieces, chunkDelayMs: PIECE_GAP_MS };
    }
    // The turn from the conversation itself: one assistant message per turn before it.
    const turn = ((req.body?.messages ?? []) as Array<{ role: string }>).filter((m) => m.role === 'assistant').length + 1;
    if (turn > TURNS) return openaiText(`read ${TURNS * CALLS_PER_TURN} greetings`);
    return openaiToolCall(Array.from({ length: CALLS_PER_TURN }, (_, i) => ({ id: `call_${turn}_${i}`, name: 'gr__greet', arguments: { name: `${turn}-${i}` } })));
  });
  try {
    log(`  a run of ${TURNS} turns of ${CALLS_PER_TURN} tool calls (about 2,000 entries)...`);
    const { failure } = await trigger(signed, LONG_RUN);
    if (failure) throw new Error(`triggering the long run: ${failure}`);
    const outcome = (await stack.client.workflow.getHandle(workflowId(LONG_RUN)).result()) as { status: string; entries: number };
    if (outcome.status !== 'ready') throw new Error(`the long run ended ${outcome.status}`);
    const runPage = await timeRunPage(deps, LONG_RUN);
    log(`  run page: ${runPage.loadsMs.join(', ')} ms to usable (${runPage.entries} entries)`);
    log('  the answer\'s first piece to the run page, one run at a time...');
    const browser = await launchBrowser();
    const first = await firstToken
      .measure({
        browser,
        apiUrl: stack.apiUrl,
        session: deps.session,
        signed,
        pageUrl: (run) => `${stack.apiUrl}/console/runs/${PROFILE}/${TASK}/${run}`,
        closed: (run) => stack.client.workflow.getHandle(workflowId(run)).result(),
        log,
      })
      .finally(() => browser.close());
    const followed = await followedRuns(deps, signed);
    return { runPage, firstToken: first, followed };
  } finally {
    stack.fake.script(otherwise);
  }
}

const workflowId = (run: string) => runWorkflowId({ owner: 'bench', profile: PROFILE, task: TASK, run });

/** The greeter servlet installed as `gr` in a profile of its own, with a task there: the task's signed URL. */
async function setUp(api: PartDeps['api']): Promise<string> {
  const { greeter } = await buildTestServlets();
  const json = (body: unknown, method = 'POST'): RequestInit => ({ method, body: JSON.stringify(body) });
  await expectStatus(api('/api/servlets/~/greeter', { method: 'PUT', headers: { 'content-type': 'application/wasm' }, body: greeter }), 'publishing the greeter servlet');
  await expectStatus(api(`/api/profiles/~/${PROFILE}`, json({ description: '', is_public: false })), `creating the profile ${PROFILE}`);
  await expectStatus(api(`/api/profiles/~/${PROFILE}/installations`, json({ servlet_slug: 'bench/greeter', name: 'gr' })), 'installing the greeter servlet');
  const task = { runner: 'openai', openai: { prompt: `${PROMPT_MARK} {{ text }}`, model: 'bench' }, settings: { key: 'sk-bench-task-key' } };
  await expectStatus(api(`/api/tasks/~/${PROFILE}/${TASK}`, json(task, 'PUT')), 'creating the console task');
  const res = await expectStatus(api(`/api/tasks/~/${PROFILE}/${TASK}/signed`, { method: 'POST' }), 'signing the console task');
  return ((await res.json()) as { url: string }).url;
}

async function expectStatus(pending: Promise<Response>, what: string): Promise<Response> {
  const res = await pending;
  if (res.status !== 200 && res.status !== 201) throw new Error(`${what} answered ${res.status}: ${await res.text()}`);
  return res;
}

/**
 * Loads the run's page LOADS times, each in a fresh context (no cache, the session cookie on the API's origin):
 * milliseconds from navigation start (the page's time origin) to usable, and to the first entry in the DOM. A
 * MutationObserver set before the app runs notes the first moment each holds.
 */
async function timeRunPage({ stack, api, session }: PartDeps & { session: string }, run: string): Promise<ConsoleFigures['runPage']> {
  const record = (await (await api(`/api/runs/bench/${PROFILE}/${TASK}/${run}`)).json()) as { results: unknown[] };
  const entries = record.results.length;
  // The same stream read by this process, not rendered: how much of the page's time is the API sending the entries.
  const streamMs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const agent = new http.Agent({ keepAlive: false });
    const t0 = performance.now();
    const s = openStream(`${stack.apiUrl}/api/runs/bench/${PROFILE}/${TASK}/${run}/events`, { cookie: `sessionId=${session}` }, agent);
    await s.closed;
    if (!s.ended) throw new Error('the long run\'s event stream closed without end');
    streamMs.push(round(performance.now() - t0));
    agent.destroy();
  }
  const browser = await launchBrowser();
  const loads: Array<{ usable: number; firstEntry: number; allEntries: number; renders: number }> = [];
  try {
    for (let i = 0; i < LOADS; i++) {
      const context = await browser.newContext();
      await context.addCookies([{ name: 'sessionId', value: session, url: stack.apiUrl }]);
      await context.addInitScript({ content: observeUsable(entries) });
      const page = await context.newPage();
      await page.goto(`${stack.apiUrl}/console/runs/${PROFILE}/${TASK}/${run}`, { waitUntil: 'commit' });
      const handle = await page.waitForFunction(() => (globalThis as { __usable?: unknown }).__usable, undefined, { timeout: 60_000 });
      loads.push((await handle.jsonValue()) as (typeof loads)[number]);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const loadsMs = loads.map((l) => round(l.usable));
  const medianMs = round(percentile(loadsMs, 50));
  return { entries, loadsMs, medianMs, maxMs: Math.max(...loadsMs), targetMs: TARGET_MS, met: medianMs <= TARGET_MS, usable: USABLE, firstEntryMedianMs: round(percentile(loads.map((l) => l.firstEntry), 50)),
    streamToEndMs: streamMs,
    allEntriesMedianMs: round(percentile(loads.map((l) => l.allEntries), 50)),
    rendersAddingEntries: loads.map((l) => l.renders),
  };
}

/** The tests' launch (test/helpers/browser.ts): Debian's Chromium, headless, no sandbox (root). */
async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: testEnv.chromium, args: ['--no-sandbox'], headless: true });
}

/**
 * Runs in the page before its scripts (a string: this project type-checks without the DOM's types): sets
 * `window.__usable` once the run page is usable (see USABLE), with the moments the first and the last entry were
 * in the DOM and how many renders added entries.
 */
const observeUsable = (entries: number) => `(() => {
  let firstEntry;
  let allEntries;
  let before = 0;
  let renders = 0;
  const observer = new MutationObserver(() => {
    const shown = document.querySelector('ol.entries')?.children.length ?? 0;
    if (shown > 0 && firstEntry === undefined) firstEntry = performance.now();
    if (shown >= ${entries} && allEntries === undefined) allEntries = performance.now();
    if (shown !== before) renders++;
    before = shown;
    const status = document.querySelector('[role="status"]')?.textContent ?? '';
    const remove = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Delete run');
    if (shown >= ${entries} && status.includes('ready') && remove && !remove.disabled) {
      window.__usable = { usable: performance.now(), firstEntry, allEntries, renders };
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
})();`;

/**
 * ROUND runs at once against the slow, streaming model per round, in ORDER; in a followed round each run gets an
 * event stream (`GET <run path>/events`, as bench/live.ts opens them) right after its trigger, held until `end`, which
 * gets the text so far as `delta` events (counted per stream) while the model streams. CPU per run of
 * every process of the stack, measured from the first trigger to the last run's end, each round after the stack
 * settled.
 */
async function followedRuns({ stack, pids, log, session }: PartDeps & { session: string }, signed: string): Promise<ConsoleFigures['followed']> {
  const headers = { cookie: `sessionId=${session}` };
  const cpu = () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const totals: Record<string, Record<string, number>> = { followed: {}, unfollowed: {} };
  const rounds: ConsoleFigures['followed']['rounds'] = [];
  const deltas: number[] = [];
  for (const [r, side] of ORDER.entries()) {
    const settled = await settle(pids);
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const before = cpu();
    const began = performance.now();
    const limit = pLimit(50);
    const streams: Array<ReturnType<typeof openStream>> = [];
    await Promise.all(
      Array.from({ length: ROUND }, (_, i) =>
        limit(async () => {
          const run = `${side}-${r}-${i}`;
          const { failure } = await trigger(signed, run);
          if (failure) throw new Error(failure);
          if (side === 'followed') streams.push(openStream(`${stack.apiUrl}/api/runs/bench/${PROFILE}/${TASK}/${run}/events`, headers, agent));
        }),
      ),
    );
    await Promise.all(Array.from({ length: ROUND }, (_, i) => stack.client.workflow.getHandle(workflowId(`${side}-${r}-${i}`)).result()));
    await Promise.race([Promise.all(streams.map((s) => s.closed)), sleep(30_000)]);
    const seconds = round((performance.now() - began) / 1000);
    const after = cpu();
    for (const s of streams) s.close();
    agent.destroy();
    for (const k of Object.keys(pids)) totals[side]![k] = (totals[side]![k] ?? 0) + ((after[k]! - before[k]!) * 1000) / (ROUND * (ORDER.length / 2));
    const ended = side === 'followed' ? streams.filter((s) => s.ended).length : undefined;
    deltas.push(...streams.map((s) => s.deltas));
    const got = side === 'followed' ? `, ${ended} streams got end, ${streams.filter((s) => s.deltas > 0).length} got deltas` : '';
    log(`  ${side}: ${ROUND} runs closed in ${seconds} s (after the stack settled in ${settled} s)${got}`);
    rounds.push({ side, seconds, ...(ended === undefined ? {} : { streamsEnded: ended }) });
  }
  const perRun = (c: Record<string, number>) => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, round(v, 2)]));
  return {
    runsPerRound: ROUND,
    rounds,
    model: { holdMs: HOLD_MS, pieces: PIECES, pieceGapMs: PIECE_GAP_MS },
    cpuMsPerRun: { followed: perRun(totals.followed!), unfollowed: perRun(totals.unfollowed!) },
    deltas: { median: percentile(deltas, 50), min: Math.min(...deltas), streamsWithout: deltas.filter((d) => d === 0).length },
  };
}

/** The part's lines for bench/run.ts's output. */
export function printConsole(r: ConsoleFigures) {
  const p = r.runPage;
  console.log(`\nConsole: a run page with ${p.entries} entries, usable (${p.usable}) in ${p.medianMs} ms median, ${p.maxMs} ms max of ${p.loadsMs.length} loads ` +
    `(fresh context each; target ≤ ${p.targetMs} ms: ${p.met ? 'met' : 'not met'}); first entry in the DOM at ${p.firstEntryMedianMs} ms median, the last at ${p.allEntriesMedianMs} ms, in ${p.rendersAddingEntries.join(', ')} renders; loads ${p.loadsMs.join(', ')} ms`);
  console.log(`  the same event stream read by the bench (not rendered), request to end: ${p.streamToEndMs.join(', ')} ms`);
  printFirstToken(r.firstToken);
  const f = r.followed;
  const m = f.model;
  const line = (c: Record<string, number>) => Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ');
  console.log(
    `Console: ${f.runsPerRound} runs at once per round against a model that waits ${m.holdMs / 1000} s, then streams ${m.pieces} pieces ${m.pieceGapMs} ms apart; ` +
      `rounds ${f.rounds.map((x) => `${x.side} ${x.seconds} s`).join(', ')}`,
  );
  console.log(`  CPU ms per run, followed by an event stream: ${line(f.cpuMsPerRun.followed)}`);
  console.log(`  CPU ms per run, unfollowed:                  ${line(f.cpuMsPerRun.unfollowed)}`);
  console.log(`  delta events per followed stream: ${f.deltas.median} median, ${f.deltas.min} fewest; ${f.deltas.streamsWithout} streams got none`);
}
