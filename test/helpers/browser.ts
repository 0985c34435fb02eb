import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { testEnv } from './env';

/**
 * The browser tests' harness (test/console/): Debian's Chromium (scripts/install-browser.sh) driven by playwright-core,
 * launched once per mocha run on first use and closed by the root hooks (test/setup.ts); a fresh context per test; a
 * screenshot of each test's page in test-results/console/. playwright-core is loaded on first use only, so the runs
 * that open no page (the unit tests) do not pay for it.
 */
export const SCREENSHOTS = path.join(__dirname, '../../test-results/console');

let launched: Promise<Browser> | undefined;

/** The versions that must agree: this Chromium's, and playwright-core's with the Chromium it was released with. */
export async function browserVersions(): Promise<{ chromium: string; playwright: string; playwrightChromium: string }> {
  const chromium = await promisify(execFile)(testEnv.chromium, ['--version'], { timeout: 30_000 })
    .then(({ stdout }) => stdout.trim().split('\n')[0]!)
    .catch((err: Error) => `unknown (${testEnv.chromium} --version: ${err.message})`);
  const pkg = path.dirname(require.resolve('playwright-core/package.json'));
  const { version } = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8')) as { version: string };
  const { browsers } = JSON.parse(fs.readFileSync(path.join(pkg, 'browsers.json'), 'utf8')) as { browsers: Array<{ name: string; browserVersion?: string }> };
  const built = browsers.find((b) => b.name === 'chromium')?.browserVersion ?? 'unknown';
  return { chromium, playwright: version, playwrightChromium: built };
}

/** Both sides of a launch or a first page that failed, so the failure says which versions disagree. */
export async function versionMismatch(err: unknown): Promise<Error> {
  const v = await browserVersions();
  return new Error(
    `this Chromium and playwright-core disagree: ${v.chromium} (${testEnv.chromium}) with playwright-core ${v.playwright} ` +
      `(released with Chromium ${v.playwrightChromium}); pin a playwright-core that drives this Chromium. ` +
      `The error: ${err instanceof Error ? err.message : String(err)}`,
  );
}

async function launch(): Promise<Browser> {
  if (!fs.existsSync(testEnv.chromium)) {
    throw new Error(`no Chromium at ${testEnv.chromium}: run scripts/install-browser.sh (scripts/test.sh runs it), or set CHROMIUM`);
  }
  const { chromium } = await import('playwright-core');
  try {
    // Root (CI) cannot use Chromium's sandbox; the pages are the tests' own, on loopback.
    return await chromium.launch({ executablePath: testEnv.chromium, args: ['--no-sandbox'], headless: true });
  } catch (err) {
    throw await versionMismatch(err);
  }
}

/** The run's one browser, launched on first use. A failed launch is tried again by the next caller. */
export function browser(): Promise<Browser> {
  launched ??= launch().catch((err: unknown) => {
    launched = undefined;
    throw err;
  });
  return launched;
}

/** Closes the run's browser, if one was launched (the root hooks call it). */
export async function closeBrowser(): Promise<void> {
  const running = launched;
  launched = undefined;
  await (await running?.catch(() => undefined))?.close();
}

/** A test's title as a file name: `test-results/console/<this>.png`. */
export const screenshotName = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 150);

export interface BrowserTest {
  readonly context: BrowserContext;
  /** The test's page: the one its screenshot shows. */
  readonly page: Page;
}

/**
 * The mocha hooks of a describe whose tests use the browser: a fresh context (`options`) and page for each test, and
 * after it, pass or fail, a screenshot of the page in test-results/console/<test title>.png; a failed test also
 * leaves the pages' console messages and errors there as <test title>.log. Call it in the describe's body.
 */
export function useBrowser(options: BrowserContextOptions = {}): BrowserTest {
  let current: { context: BrowserContext; page: Page; messages: string[] } | undefined;
  beforeEach(async function () {
    this.timeout(60_000);
    const context = await (await browser()).newContext(options);
    const messages: string[] = [];
    context.on('console', (m) => messages.push(`${m.type()}: ${m.text()} (${m.page()?.url() ?? 'no page'})`));
    context.on('weberror', (e) => messages.push(`uncaught: ${e.error().message} (${e.page()?.url() ?? 'no page'})`));
    current = { context, page: await context.newPage(), messages };
  });
  afterEach(async function () {
    if (!current) return;
    const { context, page, messages } = current;
    current = undefined;
    const test = this.currentTest;
    const name = screenshotName(test?.fullTitle() ?? 'unnamed');
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    // A page that crashed or closed has no picture; the test's own outcome says why.
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true }).catch((err: Error) => {
      messages.push(`screenshot: ${err.message}`);
    });
    if (test?.state === 'failed') fs.writeFileSync(path.join(SCREENSHOTS, `${name}.log`), messages.join('\n') + '\n');
    await context.close();
  });
  return {
    get context() {
      if (!current) throw new Error('no browser context: useBrowser() gives one to each test of its describe');
      return current.context;
    },
    get page() {
      if (!current) throw new Error('no browser page: useBrowser() gives one to each test of its describe');
      return current.page;
    },
  };
}

/**
 * Scans the page with axe (@axe-core/playwright, every rule it runs by default) and throws when it finds a serious
 * or critical violation, listing each with the elements it found it on; minor and moderate ones pass.
 */
export async function checkAccessibility(page: Page): Promise<void> {
  const { default: AxeBuilder } = await import('@axe-core/playwright');
  const { violations } = await new AxeBuilder({ page }).analyze();
  const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (grave.length === 0) return;
  const listed = grave.map((v) => {
    const nodes = v.nodes.map((n) => `    ${n.target.join(' ')}: ${n.html}\n      ${(n.failureSummary ?? '').replace(/\n/g, '\n      ')}`);
    return `  ${v.impact} ${v.id}: ${v.help} (${v.helpUrl})\n${nodes.join('\n')}`;
  });
  throw new Error(`${grave.length} serious or critical accessibility violation(s) on ${page.url()}:\n${listed.join('\n')}`);
}
