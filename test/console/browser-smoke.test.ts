import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { browser, browserVersions, SCREENSHOTS, screenshotName, useBrowser, versionMismatch } from '../helpers/browser';

/** The first thing to fail when Debian's Chromium moves past what the pinned playwright-core can drive. */
describe('the browser harness', () => {
  const b = useBrowser();
  let started = 0;
  before(() => (started = Date.now()));

  it('drives this Chromium with playwright-core: the page it opens is read back, from the Chromium installed', async () => {
    const version = (await browser()).version();
    try {
      await b.page.goto('data:text/html,<!doctype html><title>smoke</title><main><h1>Hello from Chromium</h1></main>');
      expect(await b.page.title()).to.equal('smoke');
      expect(await b.page.getByRole('heading', { name: 'Hello from Chromium' }).textContent()).to.equal('Hello from Chromium');
      expect(await b.page.evaluate('navigator.userAgent')).to.contain('HeadlessChrome/');
    } catch (err) {
      throw await versionMismatch(err);
    }
    const { chromium } = await browserVersions();
    expect(chromium, `the browser launched says ${version}`).to.contain(version);
  });

  it('saves a screenshot of each test, the one before this among them', function () {
    const before = this.test!.parent!.tests[0]!;
    const file = path.join(SCREENSHOTS, `${screenshotName(before.fullTitle())}.png`);
    expect(fs.existsSync(file), file).to.equal(true);
    // A PNG, written during this run.
    expect(fs.readFileSync(file).subarray(1, 4).toString('latin1')).to.equal('PNG');
    // Written by this run (file times may be rounded down to the second).
    expect(fs.statSync(file).mtimeMs).to.be.at.least(started - 1_000);
  });
});
