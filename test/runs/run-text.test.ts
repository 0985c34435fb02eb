import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { clearRunText, deleteStaleTexts, followedRuns, markFollowed, readRunText, STALE_TEXT_MS, writeRunText } from '../../src/store/run-text';
import { deleteRunContent } from '../../src/store/run-content';

const runId = () => `run-text-${crypto.randomBytes(6).toString('hex')}`;

describe('runs: the text document and who follows a run', () => {
  const models = () => getStack().db.models;

  it('keeps the latest text of a run with a growing seq, and forgets it when cleared', async () => {
    const id = runId();
    expect(await readRunText(models(), id)).to.equal(null);
    await writeRunText(models(), id, { call: 'model-1/1', text: 'Hel' });
    const first = await readRunText(models(), id);
    await writeRunText(models(), id, { call: 'model-1/1', text: 'Hello' });
    const second = await readRunText(models(), id);
    expect(first).to.include({ call: 'model-1/1', text: 'Hel' });
    expect(second).to.include({ call: 'model-1/1', text: 'Hello' });
    expect(second!.seq).to.be.greaterThan(first!.seq);
    await clearRunText(models(), id);
    expect(await readRunText(models(), id)).to.equal(null);
  });

  it('tells a retried call apart by its call', async () => {
    const id = runId();
    await writeRunText(models(), id, { call: 'model-1/1', text: 'partial answ' });
    await writeRunText(models(), id, { call: 'model-1/2', text: 'A' });
    expect(await readRunText(models(), id)).to.include({ call: 'model-1/2', text: 'A' });
  });

  it('lists only the runs whose follow has not expired', async () => {
    const [followed, expired, renewed] = [runId(), runId(), runId()];
    const now = Date.now();
    await markFollowed(models(), followed, now + 30_000);
    await markFollowed(models(), expired, now - 1_000);
    await markFollowed(models(), renewed, now - 1_000);
    await markFollowed(models(), renewed, now + 30_000);
    const ids = await followedRuns(models(), new Date(now));
    expect(ids).to.include.members([followed, renewed]);
    expect(ids).not.to.include(expired);
    expect(await followedRuns(models(), new Date(now + 60_000))).not.to.include.members([followed]);
  });

  it('sweeps texts no call writes any more and follows that ended, and keeps the rest', async () => {
    const [fresh, stale, following, ended] = [runId(), runId(), runId(), runId()];
    // The sweep runs later: `stale`'s text is then older than STALE_TEXT_MS, `fresh` was written again just before.
    const later = Date.now() + STALE_TEXT_MS + 1_000;
    await writeRunText(models(), fresh, { call: 'model-1/1', text: 'still being written' });
    await writeRunText(models(), stale, { call: 'model-1/1', text: 'its call ended long ago' });
    await markFollowed(models(), following, later + 30_000);
    await markFollowed(models(), ended, later - 120_000);
    await models().RunText.collection.updateOne({ _id: fresh as never }, { $set: { at: new Date(later - 1_000) } });
    expect(await deleteStaleTexts(models(), later)).to.be.at.least(2);
    expect(await readRunText(models(), fresh)).to.include({ text: 'still being written' });
    expect(await readRunText(models(), stale)).to.equal(null);
    const follows = (await models().RunFollow.find({ _id: { $in: [following, ended] } }).lean<Array<{ _id: string }>>()).map((f) => f._id);
    expect(follows).to.deep.equal([following]);
  });

  it('goes with its run: deleting a run\'s contents deletes its text so far and its follow', async () => {
    const id = runId();
    await writeRunText(models(), id, { call: 'model-1/1', text: 'Hel' });
    await markFollowed(models(), id, Date.now() + 30_000);
    await deleteRunContent(models(), [id]);
    expect(await readRunText(models(), id)).to.equal(null);
    expect(await followedRuns(models(), new Date())).not.to.include(id);
  });
});
