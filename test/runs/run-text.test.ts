import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { clearRunText, followedRuns, markFollowed, readRunText, writeRunText } from '../../src/store/run-text';

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
});
