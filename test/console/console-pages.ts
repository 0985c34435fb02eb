import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Locator, Page } from 'playwright-core';
import { api } from '../helpers/api';
import { checkAccessibility, SCREENSHOTS } from '../helpers/browser';
import { getStack } from '../helpers/stack';

/** How long a page may take to show what a run did: a bound for a loaded machine, not a timing assertion. */
export const RUN_WAIT_MS = 45_000;

/**
 * Signs the browser in as a person does: a one-time link asked for by the user (`POST /api/sign-in-links`), opened in
 * the page; resolves once the console shows its main navigation.
 */
export async function signInByLink(page: Page, sessionId: string, baseUrl = getStack().apiUrl): Promise<void> {
  const link = await api(sessionId, baseUrl).post('/api/sign-in-links', {});
  expect(link.status, link.text).to.equal(201);
  await page.goto(link.body.url as string);
  await mainNav(page).getByRole('link', { name: 'Tasks' }).waitFor();
}

/** The console's main navigation. */
export const mainNav = (page: Page): Locator => page.getByRole('navigation', { name: 'Main' });

/** Follows a link of the main navigation, as a person does, and waits for the page's heading. */
export async function goTo(page: Page, link: 'Tasks' | 'Profiles' | 'Schedules' | 'Signed URLs' | 'Tokens', heading: string | RegExp): Promise<void> {
  await mainNav(page).getByRole('link', { name: link }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** The run page's status (`role="status"`, "Status: <word>"). */
export const runStatus = (page: Page): Locator => page.getByRole('status').filter({ hasText: 'Status:' });

/** Waits until the run page's status says `word`. */
export async function statusBecomes(page: Page, word: string, timeout = RUN_WAIT_MS): Promise<void> {
  await runStatus(page).filter({ hasText: new RegExp(`Status:\\s*${word}\\b`) }).waitFor({ timeout });
}

/** Waits until the page's main content shows `text`. */
export async function shows(page: Page, text: string | RegExp, timeout = RUN_WAIT_MS): Promise<void> {
  await page.getByRole('main').getByText(text).first().waitFor({ timeout });
}

/**
 * Scans the page with axe (no serious or critical violation) and keeps a picture of it as
 * test-results/console/page-<name>.png, beside the harness's one per test.
 */
export async function checkPage(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `page-${name}.png`), fullPage: true });
  await checkAccessibility(page);
}

/** The run named in the page's address (`/console/runs/<profile>/<task>/<run>`). */
export function runOf(page: Page): { profile: string; task: string; run: string } {
  const match = /\/console\/runs\/([^/]+)\/([^/]+)\/([^/?#]+)/.exec(new URL(page.url()).pathname);
  expect(match, `a run page's address: ${page.url()}`).to.not.equal(null);
  const [, profile, task, run] = match!.map(decodeURIComponent) as [string, string, string, string];
  return { profile, task, run };
}
