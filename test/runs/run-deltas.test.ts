import { expect } from 'chai';
import { findRun } from '../../src/store/runs';
import { clearRunText, writeRunText } from '../../src/store/run-text';
import { getStack } from '../helpers/stack';
import { signedIn, type Api } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until } from '../helpers/runs';
import { openEvents } from '../helpers/events';

async function trigger(api: Api, task: string, run: string): Promise<string> {
  const res = await postSigned(await signedUrl(api, 'default', task), { text: 'x' }, { 'run-id': run });
  expect(res.status, res.text).to.equal(201);
  return new URL(res.body.url).pathname;
}

/** The run's _id, once its record exists. */
async function runId(owner: string, task: string, run: string): Promise<string> {
  let id: string | undefined;
  await until(`the record of ${run}`, async () => {
    id = (await findRun(getStack().db.models, { owner, profile: 'default', task, run }))?._id;
    return id !== undefined;
  });
  return id!;
}

const deltas = (events: Array<{ event?: string; data?: string; id?: string }>) => events.filter((e) => e.event === 'delta');

describe('runs: the text so far on a live run\'s stream', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('sends delta events with the growing text, a reset when the call changes or the text is gone, then the entry', async () => {
    const { api, username, sessionId } = await signedIn('delta');
    const { fake, db } = getStack();
    await createTask(api, 'default', 'talk');
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    // A first turn (a tool the profile lacks: its error goes back to the model), so the run has entries (they come
    // with its first call's outcome), then a second call held.
    fake.script([
      openaiToolCall([{ name: 'nothing__here', arguments: {} }]),
      async () => {
        await answered;
        return openaiText('Hello world');
      },
    ]);
    const path = await trigger(api, 'talk', 'd1');
    const id = await runId(username, 'talk', 'd1');
    const stream = await openEvents(sessionId, path);
    await until('the run marked followed', async () => (await db.models.RunFollow.findById(id).lean()) !== null);
    await until('the first turn\'s entries', () => stream.entries().some((e) => e.data!.includes('nothing__here')));

    await writeRunText(db.models, id, { call: 'model/1', text: 'Hel' });
    await until('the first delta', () => deltas(stream.events).length >= 1);
    await writeRunText(db.models, id, { call: 'model/1', text: 'Hello wo' });
    await until('the second delta', () => deltas(stream.events).length >= 2);
    await writeRunText(db.models, id, { call: 'model/2', text: 'Hello' });
    await until('the retried call\'s text', () => deltas(stream.events).length >= 4);
    await clearRunText(db.models, id);
    await until('the reset of a gone text', () => deltas(stream.events).length >= 5);

    // A reconnect gets the stored entries, then the latest text.
    await writeRunText(db.models, id, { call: 'model/2', text: 'Hello again' });
    const entriesSoFar = stream.entries().length;
    const again = await openEvents(sessionId, path, { lastEventId: String(entriesSoFar - 1) });
    await until('the reconnect\'s delta', () => deltas(again.events).length >= 1);
    again.abort();
    expect(deltas(again.events)[0]!.data).to.equal(JSON.stringify({ text: 'Hello again' }));

    await clearRunText(db.models, id);
    answer();
    await stream.closed;

    const sent = deltas(stream.events).map((e) => JSON.parse(e.data!));
    expect(sent.slice(0, 5)).to.deep.equal([{ text: 'Hel' }, { text: 'Hello wo' }, { reset: true }, { text: 'Hello' }, { reset: true }]);
    for (const e of deltas(stream.events)) expect(e.id, 'a delta is no entry').to.equal(undefined);
    const named = stream.events.filter((e) => e.event);
    // The worker's own text of the held call ('Hello world', the run being followed) may come around its entry.
    const fifth = named.indexOf(named.filter((e) => e.event === 'delta')[4]!);
    const answerEntry = named.findIndex((e) => e.event === 'entry' && e.data!.includes('Hello world'));
    expect(answerEntry, 'the stored answer comes after the deltas').to.be.above(fifth);
  });

  it('sends no delta events for a run without a text document', async () => {
    const { api, sessionId } = await signedIn('nodelta');
    getStack().fake.script([openaiText('plain')]);
    await createTask(api, 'default', 'plain');
    const path = await trigger(api, 'plain', 'p1');
    const stream = await openEvents(sessionId, path);
    await stream.closed;
    expect(deltas(stream.events)).to.deep.equal([]);
  });
});
