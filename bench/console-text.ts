/**
 * The console part's first-token figure (issue 32): the time from the fake provider sending an answer's first piece
 * to that text in the run page's DOM, one run at a time, each page in a fresh browser context.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser } from 'playwright-core';
import { openaiText, type FakeReply } from '../test/helpers/fake-provider';
import { percentile, round } from './measure';
import { trigger } from './slow-phase';

const SAMPLES = 20;
const TARGET_MS = 300;
/** The fake writes the role chunk, waits this, then the first piece, and so on: pieces a second apart. */
const PIECE_GAP_MS = 1_000;
const PIECES = ['Firstpiece ', 'then the rest.'];
/**
 * From the page's event stream open to the answer: the API marks the run followed when its watch starts, the worker
 * reads who follows once a second (activities/followed-runs.ts), and writes only a followed run's text.
 */
const FOLLOWER_SEEN_MS = 2_500;

export interface FirstTokenFigures {
  samples: number;
  /** The samples whose first piece reached the page as a `delta` (the others: only with the stored answer). */
  viaDelta: number;
  msToPage: number[];
  p50Ms: number;
  maxMs: number;
  targetMs: number;
  met: boolean;
  pieceGapMs: number;
}

export interface FirstTokenDeps {
  browser: Browser;
  apiUrl: string;
  session: string;
  /** The task's signed URL. */
  signed: string;
  /** The run page's address of a run. */
  pageUrl: (run: string) => string;
  /** Resolves when the run has closed. */
  closed: (run: string) => Promise<unknown>;
  log: (msg: string) => void;
}

/**
 * The probe: `owns` tells the bench's responder which runs are its own, `answer` is their fake answer (held until the
 * page follows the run), `measure` runs the samples.
 */
export function firstTokenProbe() {
  const gates = new Map<string, { open: () => void; opened: Promise<void>; sentAt?: number }>();
  const gate = (run: string) => {
    let g = gates.get(run);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      g = { open, opened };
      gates.set(run, g);
    }
    return g;
  };

  return {
    owns: (run: string) => run.startsWith('first-'),

    async answer(run: string): Promise<FakeReply> {
      const g = gate(run);
      await g.opened;
      // The first piece goes out one gap after the reply is handed to the fake (after the role chunk).
      g.sentAt = Date.now() + PIECE_GAP_MS;
      return { ...openaiText(PIECES.join('')), chunks: PIECES, chunkDelayMs: PIECE_GAP_MS };
    },

    async measure(deps: FirstTokenDeps): Promise<FirstTokenFigures> {
      const { browser, apiUrl, session, signed, log } = deps;
      const samples: Array<{ ms: number; via: 'delta' | 'entry' }> = [];
      for (let i = 0; i < SAMPLES; i++) {
        const run = `first-${i}`;
        const { failure } = await trigger(signed, run);
        if (failure) throw new Error(`triggering ${run}: ${failure}`);
        const context = await browser.newContext();
        try {
          await context.addCookies([{ name: 'sessionId', value: session, url: apiUrl }]);
          await context.addInitScript({ content: observeFirstText(PIECES[0]!.trim()) });
          const page = await context.newPage();
          const streaming = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith(`/${run}/events`), { timeout: 60_000 });
          await page.goto(deps.pageUrl(run), { waitUntil: 'commit' });
          await streaming;
          await sleep(FOLLOWER_SEEN_MS);
          gate(run).open();
          const handle = await page.waitForFunction(() => (globalThis as { __firstText?: unknown }).__firstText, undefined, { timeout: 60_000 });
          const seen = (await handle.jsonValue()) as { at: number; via: 'delta' | 'entry' };
          samples.push({ ms: seen.at - gate(run).sentAt!, via: seen.via });
          await deps.closed(run);
        } finally {
          await context.close();
        }
      }
      const delta = samples.filter((s) => s.via === 'delta').map((s) => s.ms);
      const msToPage = samples.map((s) => s.ms);
      const p50Ms = delta.length ? round(percentile(delta, 50)) : NaN;
      log(`  first piece to page: ${msToPage.join(', ')} ms (${delta.length} of ${samples.length} by delta)`);
      return { samples: samples.length, viaDelta: delta.length, msToPage, p50Ms, maxMs: delta.length ? Math.max(...delta) : NaN, targetMs: TARGET_MS, met: p50Ms <= TARGET_MS, pieceGapMs: PIECE_GAP_MS };
    },
  };
}

/**
 * Runs in the page before its scripts (a string: this project type-checks without the DOM's types): sets
 * `window.__firstText` to the moment (`Date.now()`, the clock the bench's own Date.now() reads) `word` is first in the
 * DOM, and whether it came as the text being written or with the stored answer.
 */
const observeFirstText = (word: string) => `(() => {
  const word = ${JSON.stringify(word)};
  const observer = new MutationObserver(() => {
    const at = Date.now();
    const writing = document.querySelector('.entry.writing pre')?.textContent ?? '';
    const stored = document.querySelector('ol.entries')?.textContent ?? '';
    const via = writing.includes(word) ? 'delta' : stored.includes(word) ? 'entry' : undefined;
    if (!via) return;
    window.__firstText = { at, via };
    observer.disconnect();
  });
  observer.observe(document, { childList: true, subtree: true, characterData: true });
})();`;

/** The part's line for bench/run.ts's output. */
export function printFirstToken(f: FirstTokenFigures) {
  console.log(
    `Console: the answer's first piece to the page: ${f.p50Ms} ms p50, ${f.maxMs} ms max of ${f.viaDelta} shown as written ` +
      `(${f.samples} runs, one at a time; target ≤ ${f.targetMs} ms: ${f.met ? 'met' : 'not met'}); all: ${f.msToPage.join(', ')} ms`,
  );
}
