import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { FOLLOWED_POLL_MS } from '../../activities/followed-runs';
import { findRun } from '../../src/store/runs';
import { signedIn } from '../helpers/api';
import { useBrowser } from '../helpers/browser';
import { openaiText } from '../helpers/fake-provider';
import { createTask, until } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { checkPage, runOf, RUN_WAIT_MS, shows, signInByLink, statusBecomes } from './console-pages';

/** The answer as the fake provider streams it: one piece a second, so the page has seconds to show each part. */
const PIECES = ['Tides ', 'turn ', 'slowly ', 'under ', 'a patient ', 'moon.'];
const ANSWER = PIECES.join('');
const PIECE_GAP_MS = 1_000;

describe('the console shows the answer as it is written', function () {
  this.timeout(120_000);
  const b = useBrowser();
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('shows the text so far on the run page while the run is running, then the stored answer in its place once ready', async () => {
    const { db, fake } = getStack();
    const { sessionId, username, api: me } = await signedIn('writer');
    await createTask(me, 'default', 'tides', { prompt: 'Write about {{ text }}' });
    // The answer waits until the page follows the run and the worker has had time to learn it, so that the worker
    // writes the text so far from the first piece on (it writes only a followed run's text).
    let follow!: () => void;
    const followed = new Promise<void>((resolve) => (follow = resolve));
    fake.script(async () => {
      await followed;
      return { ...openaiText(ANSWER), chunks: PIECES, chunkDelayMs: PIECE_GAP_MS };
    });

    await signInByLink(b.page, sessionId);
    await b.page.getByRole('link', { name: 'tides', exact: true }).click();
    await b.page.getByLabel('Trigger data (JSON object)').fill('{"text": "the sea"}');
    await b.page.getByRole('button', { name: 'Trigger run' }).click();
    await statusBecomes(b.page, 'running');
    const { profile, task, run } = runOf(b.page);
    const record = await until('the run\'s record', () => findRun(db.models, { owner: username, profile, task, run }).then((r) => r ?? undefined));
    await until('the run followed by the page', async () => (await db.models.RunFollow.findById(record._id).lean()) !== null, RUN_WAIT_MS);
    await sleep(2 * FOLLOWED_POLL_MS);
    follow();

    // The text so far and the status, read at one moment in the page.
    const writing = b.page.getByRole('region', { name: 'Assistant (writing)' });
    const seen = await until(
      'a part of the answer on the page',
      async () => {
        if ((await writing.count()) === 0) return undefined;
        const now = await writing
          .evaluate((region) => ({
            text: region.querySelector('pre')?.textContent ?? '',
            status: region.ownerDocument.querySelector('[role="status"]')?.textContent ?? '',
          }))
          .catch(() => undefined);
        return now && now.text.length > 0 && now.text.length < ANSWER.length ? now : undefined;
      },
      RUN_WAIT_MS,
    );
    expect(ANSWER.startsWith(seen.text), `"${seen.text}" begins the answer`).to.equal(true);
    expect(seen.status).to.match(/^Status:\s*running$/);
    await checkPage(b.page, 'run-writing');

    await statusBecomes(b.page, 'ready');
    await shows(b.page, ANSWER);
    const answer = b.page.getByRole('main').getByRole('listitem').filter({ hasText: ANSWER });
    expect(await answer.count(), 'the stored answer, once').to.equal(1);
    expect(await writing.count(), 'the text so far is gone').to.equal(0);
    await checkPage(b.page, 'run-written');
  });
});
