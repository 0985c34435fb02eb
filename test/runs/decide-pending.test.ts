import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask } from '../helpers/runs';
import { findRun, insertRun } from '../../src/store/runs';
import { findTask } from '../../src/store/tasks';

describe('runs: a decision on an approval of a run not started yet', () => {
  it('answers 404 (the run asked nothing) and leaves the run pending, to be started', async () => {
    const { api, username } = await signedIn();
    const { db } = getStack();
    await createTask(api, 'default', 'not-yet');
    const task = (await findTask(db.models, { owner: username, profile: 'default', name: 'not-yet' }))!;
    // A run its trigger recorded whose workflow is not started yet (its start under way, or deferred while Temporal
    // did not answer): no workflow under its id.
    const record = await insertRun(db.models, { identity: { owner: username, profile: 'default', task: 'not-yet', run: 'p1' }, taskId: task._id, taskVersion: task.version, runner: task.runner, payload: {}, at: new Date() });
    try {
      for (const path of ['/api/runs/~/default/not-yet/p1/approvals/some-id', '/api/profiles/~/default/tasks/not-yet/runs/p1/approvals/some-id']) {
        const res = await api.post(path, { approve: true });
        expect(res.status, `${path}: ${res.text}`).to.equal(404);
        expect(res.body.error.code).to.equal('not_found');
      }
      const after = (await findRun(db.models, record._id))!;
      expect(after.status, JSON.stringify(after.results)).to.equal('pending');
      expect(after.results).to.deep.equal([]);
      expect(after.started).to.equal(false);
    } finally {
      await db.models.Run.collection.deleteOne({ _id: record._id as never });
    }
  });
});
