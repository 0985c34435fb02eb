import { expect } from 'chai';
import { reconcileScheduleId, retentionScheduleId, taskScheduleId } from '../../src/temporal/ids';
import type { Api } from '../helpers/api';
import { createTask, until } from '../helpers/runs';
import { clusterStack } from './harness';
import { signedInOnBoth } from './clients';

/** Temporal Schedules, with two workers and two APIs: each acts once per tick, whoever polls. */
describe('schedules on the cluster topology', () => {
  it('starts one run per tick of a task schedule, not one per process', async function () {
    this.timeout(180_000);
    const { user, apis } = await signedInOnBoth();
    const [a1, a2] = apis as [Api, Api];
    // After the outage of the suite before (PostgreSQL stopped), each API answers 503 until its store is back.
    for (const a of [a1, a2]) await until('the API to answer again', async () => (await a.get('/api/tasks/~').catch(() => undefined))?.status === 200, 120_000);
    await createTask(a1, 'default', 'ticks');
    const put = await a1.put('/api/tasks/~/default/ticks/schedules/tick', { every: '2s', payload: { text: 'tick' } });
    expect(put.status, put.text).to.equal(201);
    await new Promise((r) => setTimeout(r, 11_000));
    // Paused before it is read, so no action falls between Temporal's counts and the deletion.
    const handle = clusterStack().client.schedule.getHandle(taskScheduleId({ owner: user, profile: 'default', task: 'ticks', schedule: 'tick' }));
    await handle.pause('read by the test');
    const { info } = await handle.describe();
    const del = await a2.delete('/api/tasks/~/default/ticks/schedules/tick');
    expect(del.status, del.text).to.equal(204);
    const names = await until<string[]>('the scheduled runs to close', async () => {
      const list = await a2.get('/api/runs/~/default/ticks?limit=100');
      return list.status === 200 && list.body.every((r: { status: string }) => r.status === 'ready') && (list.body as Array<{ name: string }>).map((r) => r.name);
    });
    // `tick-<UTC time to the second>`: one run per action Temporal took, none twice, each on the 2 s grid.
    const times = names.map((n) => Date.parse(n.replace(/^tick-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'))).sort((x, y) => x - y);
    const seen = `${names.join(', ')}; Temporal: ${info.numActionsTaken} taken, ${info.numActionsSkippedOverlap} skipped`;
    expect(times.length, seen).to.equal(info.numActionsTaken);
    expect(times.length, seen).to.be.within(3, 6);
    for (let i = 1; i < times.length; i++) expect((times[i]! - times[i - 1]!) % 2_000 === 0 && times[i]! > times[i - 1]!, seen).to.equal(true);
    // A tick missing between the first and the last is one the overlap policy skipped (its action's run still going:
    // docs/schedules.md), never one lost.
    const missing = (times[times.length - 1]! - times[0]!) / 2_000 + 1 - times.length;
    expect(missing, seen).to.be.at.most(info.numActionsSkippedOverlap);
  });

  it('has one reconciler and one retention Schedule, each acting once per interval', async () => {
    const { client, env } = clusterStack();
    for (const id of [reconcileScheduleId(env.TEMPORAL_TASK_QUEUE!), retentionScheduleId(env.TEMPORAL_TASK_QUEUE!)]) {
      const { info } = await client.schedule.getHandle(id).describe();
      const intervals = (Date.now() - info.createdAt.getTime()) / 5_000;
      expect(info.numActionsTaken, id).to.be.at.most(Math.ceil(intervals) + 1);
      expect(info.runningActions.length, id).to.be.at.most(1);
    }
    const ids: string[] = [];
    for await (const s of client.schedule.list()) ids.push(s.scheduleId);
    expect(ids.filter((id) => id.startsWith('reconcile-runs/'))).to.deep.equal([reconcileScheduleId(env.TEMPORAL_TASK_QUEUE!)]);
    expect(ids.filter((id) => id.startsWith('retain-runs/'))).to.deep.equal([retentionScheduleId(env.TEMPORAL_TASK_QUEUE!)]);
  });
});
