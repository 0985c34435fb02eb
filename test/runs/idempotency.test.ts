import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { runWorkflowId } from '../../src/temporal/ids';
import { lastUserText, openaiText } from '../helpers/fake-provider';

describe('runs: one name, one run', () => {
  beforeEach(() => getStack().fake.reset());

  it('returns the existing run with 200 when the run name was used before', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 't');
    const url = await signedUrl(api, 'default', 't');
    const first = await postSigned(url, { text: 'one' }, { 'run-id': 'same' });
    expect(first.status).to.equal(201);
    await waitForRun(api, first.body.url);
    const again = await postSigned(url, { text: 'two' }, { 'run-id': 'same' });
    expect(again.status).to.equal(200);
    expect(again.body.url).to.equal(first.body.url);
    const run = await waitForRun(api, first.body.url);
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say one');
    expect(getStack().fake.requests).to.have.length(1);
  });

  it('starts exactly one workflow, one record and one provider call for 50 identical triggers at once', async () => {
    const { api, username } = await signedIn();
    const { fake, db, temporal } = getStack();
    await createTask(api, 'default', 'burst');
    fake.script((req) => ({ ...openaiText(`echo: ${lastUserText(req)}`), delayMs: 300 }));
    const url = await signedUrl(api, 'default', 'burst');
    const results = await Promise.all(Array.from({ length: 50 }, () => postSigned(url, { text: 'x' }, { 'run-id': 'burst-1' })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201), String(statuses)).to.have.length(1);
    expect(statuses.filter((s) => s === 200)).to.have.length(49);
    expect(new Set(results.map((r) => r.body.url)).size).to.equal(1);
    await waitForRun(api, results[0]!.body.url);
    expect(await db.models.Run.countDocuments({ owner: username, task: 'burst', name: 'burst-1' })).to.equal(1);
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'burst', run: 'burst-1' });
    let workflows = 0;
    for await (const _ of temporal.workflow.list({ query: `WorkflowId = '${id}'` })) workflows++;
    expect(workflows).to.equal(1);
    expect(fake.requests).to.have.length(1);
  });

  it('starts the workflow for a run record left without one (a crash between insert and start)', async () => {
    const { api, username } = await signedIn();
    const { db } = getStack();
    await createTask(api, 'default', 'heal');
    const taskDoc = await db.models.Task.findOne({ owner: username, name: 'heal' }).lean();
    const now = new Date();
    await db.models.Run.create({
      owner: username, profile: 'default', task: 'heal', name: 'orphan', task_id: taskDoc!._id, task_version: taskDoc!.version,
      runner: 'openai', _id: runWorkflowId({ owner: username, profile: 'default', task: 'heal', run: 'orphan' }),
      status: 'pending', payload_json: JSON.stringify({ text: 'stored' }), entry_count: 0, started: false, created_at: now, modified_at: now,
    });
    const url = await signedUrl(api, 'default', 'heal');
    const res = await postSigned(url, { text: 'ignored: the record keeps the first trigger data' }, { 'run-id': 'orphan' });
    expect(res.status).to.equal(200);
    const run = await waitForRun(api, res.body.url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say stored');
    expect((await db.models.Run.findOne({ owner: username, name: 'orphan' }).lean())!.started).to.equal(true);
  });

  it('starts the workflow of a record left without one when the run is read, once the start is clearly lost', async () => {
    const { api, username } = await signedIn();
    const { db } = getStack();
    await createTask(api, 'default', 'heal-read');
    const taskDoc = await db.models.Task.findOne({ owner: username, name: 'heal-read' }).lean();
    const created = new Date(Date.now() - 10_000);
    await db.models.Run.create({
      owner: username, profile: 'default', task: 'heal-read', name: 'lost', task_id: taskDoc!._id, task_version: taskDoc!.version,
      runner: 'openai', _id: runWorkflowId({ owner: username, profile: 'default', task: 'heal-read', run: 'lost' }),
      status: 'pending', payload_json: JSON.stringify({ text: 'healed' }), entry_count: 0, started: false, created_at: created, modified_at: created,
    });
    const run = await waitForRun(api, `${getStack().apiUrl}/api/runs/~/default/heal-read/lost`);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say healed');
  });

  it('serves a record whose lost start cannot be healed (the start fails) instead of failing the read', async () => {
    const { api, username } = await signedIn();
    const { db, logs } = getStack();
    await createTask(api, 'default', 'heal-fails');
    const taskDoc = await db.models.Task.findOne({ owner: username, name: 'heal-fails' }).lean();
    const created = new Date(Date.now() - 10_000);
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'heal-fails', run: 'unstartable' });
    // Trigger data the start cannot read back (only a damaged store holds such a record): the heal's start throws.
    await db.models.Run.create({
      owner: username, profile: 'default', task: 'heal-fails', name: 'unstartable', task_id: taskDoc!._id, task_version: taskDoc!.version,
      runner: 'openai', _id: id, status: 'pending', payload_json: '{not json', entry_count: 0, started: false, created_at: created, modified_at: created,
    });
    const read = await api.get('/api/runs/~/default/heal-fails/unstartable');
    expect(read.status, read.text).to.equal(200);
    expect(read.body).to.deep.include({ name: 'unstartable', status: 'pending' });
    expect(logs.lines.some((l) => l.includes(id) && l.includes('could not start a run whose start was lost')), 'the failed heal is logged').to.equal(true);
    await db.models.Run.deleteOne({ _id: id });
  });

  it('names a run itself when the trigger has no run-id, a new one each time', async () => {
    const { api } = await signedIn();
    await createTask(api, 'default', 'anon');
    const url = await signedUrl(api, 'default', 'anon');
    const a = await postSigned(url, { text: 'a' });
    const b = await postSigned(url, { text: 'b' });
    expect(a.status).to.equal(201);
    expect(b.status).to.equal(201);
    expect(a.body.url).not.to.equal(b.body.url);
    await waitForRun(api, a.body.url);
    await waitForRun(api, b.body.url);
  });
});
