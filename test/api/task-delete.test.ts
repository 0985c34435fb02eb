import crypto from 'node:crypto';
import { expect } from 'chai';
import type { Types } from 'mongoose';
import { storeText, writePages } from '../../src/store/run-content';
import { runWorkflowId } from '../../src/store/runs';
import { runTask } from '../../workflows/run-task';
import type { RunInput } from '../../src/contract/types';
import { signedIn, taskBody } from '../helpers/api';
import { getStack } from '../helpers/stack';

/** A run record as the runs code writes it (inserted raw: these tests own no run logic). */
async function insertRun(owner: string, task: string, taskId: Types.ObjectId, name: string, status: string) {
  const now = new Date();
  const workflow_id = runWorkflowId({ owner, profile: 'default', task, run: name });
  await getStack().db.conn.db!.collection<{ _id: string; [k: string]: unknown }>('runs').insertOne({
    owner, profile: 'default', task, name, task_id: taskId, task_version: 1, runner: 'openai', _id: workflow_id, status,
    payload_json: '{}', results: [], entry_count: 0, started: true, created_at: now, modified_at: now,
  });
  return workflow_id;
}

/** A workflow that stays open: its task queue has no worker, so nothing ever completes or cancels it. */
async function startIdleWorkflow(workflowId: string) {
  return getStack().temporal.workflow.start(runTask, {
    workflowId,
    taskQueue: `nobody-polls-${crypto.randomBytes(4).toString('hex')}`,
    args: [{} as RunInput],
  });
}

describe('deleting a task', () => {
  it('cancels its live runs, deletes its runs and versions, and leaves other tasks alone', async () => {
    const me = await signedIn('del');
    const { db } = getStack();
    await me.api.put('/api/tasks/~/default/doomed', taskBody('openai', 'v1', 'm', 'k'));
    await me.api.put('/api/tasks/~/default/doomed', taskBody('openai', 'v2', 'm'));
    await me.api.put('/api/tasks/~/default/keeper', taskBody('openai', 'x', 'm', 'k'));
    const doomed = (await db.models.Task.findOne({ owner: me.username, name: 'doomed' }).lean())!;
    const keeper = (await db.models.Task.findOne({ owner: me.username, name: 'keeper' }).lean())!;

    const liveId = await insertRun(me.username, 'doomed', doomed._id, 'live', 'running');
    const pendingId = await insertRun(me.username, 'doomed', doomed._id, 'queued', 'pending');
    const finishedId = await insertRun(me.username, 'doomed', doomed._id, 'finished', 'ready');
    // Recorded but never started (a crash between insert and start): cancelling it finds no workflow.
    await insertRun(me.username, 'doomed', doomed._id, 'ghost', 'pending');
    const otherId = await insertRun(me.username, 'keeper', keeper._id, 'other', 'running');
    // What runs store besides their records: a large text and a second page of entries.
    for (const id of [finishedId, otherId]) {
      await storeText(db.models, id, 'big', 'x'.repeat(2048), 1024);
      await writePages(db.models, id, 'e', 40, [{ msg: 'late entry', time: 0, level: 30 }]);
    }
    const live = await startIdleWorkflow(liveId);
    const pending = await startIdleWorkflow(pendingId);

    try {
      const res = await me.api.delete('/api/tasks/~/default/doomed');
      expect(res.status).to.equal(204);

      for (const handle of [live, pending]) {
        const history = await handle.fetchHistory();
        const requested = history.events!.some((e) => e.workflowExecutionCancelRequestedEventAttributes);
        expect(requested, `${handle.workflowId} was asked to cancel`).to.equal(true);
      }
      expect(await db.models.Run.countDocuments({ owner: me.username, task: 'doomed' })).to.equal(0);
      expect(await db.models.RunBlob.countDocuments({ run: finishedId }), 'its runs\' stored texts').to.equal(0);
      expect(await db.models.RunPage.countDocuments({ run: finishedId }), 'its runs\' pages').to.equal(0);
      expect(await db.models.RunBlob.countDocuments({ run: otherId })).to.equal(1);
      expect(await db.models.RunPage.countDocuments({ run: otherId })).to.equal(1);
      expect(await db.models.TaskVersion.countDocuments({ task_id: doomed._id })).to.equal(0);
      expect(await db.models.Run.countDocuments({ owner: me.username, task: 'keeper' })).to.equal(1);
      expect(await db.models.TaskVersion.countDocuments({ task_id: keeper._id })).to.equal(1);
      expect((await me.api.get('/api/tasks/~/default/keeper')).status).to.equal(200);
    } finally {
      for (const handle of [live, pending]) await handle.terminate('test cleanup').catch(() => undefined);
    }
  });

  it('gives a task re-created under the same name a new identity, so old signed URLs cannot match it', async () => {
    const me = await signedIn('del');
    const { db } = getStack();
    await me.api.put('/api/tasks/~/default/again', taskBody('openai', 'x', 'm', 'k'));
    const before = (await db.models.Task.findOne({ owner: me.username, name: 'again' }).lean())!;
    await me.api.delete('/api/tasks/~/default/again');
    const recreated = await me.api.put('/api/tasks/~/default/again', taskBody('openai', 'x', 'm', 'k'));
    expect(recreated.status).to.equal(201);
    const after = (await db.models.Task.findOne({ owner: me.username, name: 'again' }).lean())!;
    expect(after._id.equals(before._id)).to.equal(false);
    expect(after.version).to.equal(1);
  });

  it("answers 404 for another user's task and leaves it in place", async () => {
    const owner = await signedIn('owner');
    const intruder = await signedIn('intruder');
    await owner.api.put('/api/tasks/~/default/private', taskBody('openai', 'owner prompt', 'm', 'k'));
    for (const path of [`/api/tasks/${owner.username}/default/private`, `/api/profiles/${owner.username}/default/tasks/private`]) {
      const del = await intruder.api.delete(path);
      expect(del.status).to.equal(404);
      const get = await intruder.api.get(path);
      expect(get.status).to.equal(404);
      expect(get.text).not.to.contain('owner prompt');
      const put = await intruder.api.put(path, taskBody('openai', 'hijack', getStack().config.VARIANT_A_MODEL, 'k'));
      expect(put.status).to.equal(404);
    }
    for (const path of [`/api/tasks/${owner.username}`, `/api/tasks/${owner.username}/default`, `/api/profiles/${owner.username}/default/tasks`]) {
      const list = await intruder.api.get(path);
      expect(list.status).to.equal(404);
      expect(list.text).not.to.contain('owner prompt');
    }
    const still = await owner.api.get('/api/tasks/~/default/private');
    expect(still.body.prompt).to.equal('owner prompt');
  });
});
