import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask } from '../helpers/runs';
import { taskScheduleId, type TaskScheduleRef } from '../../src/temporal/ids';

/** Schedules the tests made, deleted after them whatever happened. */
const made: TaskScheduleRef[] = [];
const pathB = (task: string, schedule = '') => `/api/tasks/~/default/${task}/schedules${schedule ? `/${schedule}` : ''}`;

describe('runs: a schedule as read', () => {
  after(async () => {
    for (const ref of made) await getStack().temporal.schedule.getHandle(taskScheduleId(ref)).delete().catch(() => undefined);
  });

  it('shows modified_at from its creation on, moved by each PUT', async () => {
    const { api, username } = await signedIn('schv');
    await createTask(api, 'default', 'when');
    made.push({ owner: username, profile: 'default', task: 'when', schedule: 'daily' });
    const created = await api.put(pathB('when', 'daily'), { cron: '0 7 * * *' });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.modified_at, created.text).to.equal(created.body.created_at);
    await new Promise((r) => setTimeout(r, 20));
    const changed = await api.put(pathB('when', 'daily'), { cron: '0 8 * * *' });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body.created_at).to.equal(created.body.created_at);
    expect(Date.parse(changed.body.modified_at), changed.text).to.be.above(Date.parse(created.body.created_at));
    const read = await api.get(pathB('when', 'daily'));
    expect(read.body.modified_at).to.equal(changed.body.modified_at);
    expect((await api.get(pathB('when'))).body.schedules[0].modified_at).to.equal(changed.body.modified_at);
  });

  it('lists no next action times while paused, and its next ones once resumed', async () => {
    const { api, username } = await signedIn('schv');
    await createTask(api, 'default', 'rest');
    made.push({ owner: username, profile: 'default', task: 'rest', schedule: 'hourly' });
    const paused = await api.put(pathB('rest', 'hourly'), { every: '1h', paused: true });
    expect(paused.status, paused.text).to.equal(201);
    expect(paused.body.next_action_times).to.deep.equal([]);
    expect((await api.get(pathB('rest', 'hourly'))).body.next_action_times).to.deep.equal([]);
    const resumed = await api.put(pathB('rest', 'hourly'), { every: '1h' });
    expect(resumed.body.next_action_times).to.have.length(3);
  });

  it('shows a time zone for a cron schedule only, and refuses one given with every', async () => {
    const { api, username } = await signedIn('schv');
    await createTask(api, 'default', 'zones');
    made.push({ owner: username, profile: 'default', task: 'zones', schedule: 'interval' }, { owner: username, profile: 'default', task: 'zones', schedule: 'calendar' });
    const every = await api.put(pathB('zones', 'interval'), { every: '1h', paused: true });
    expect(every.status, every.text).to.equal(201);
    expect(every.body).to.not.have.property('timezone');
    expect((await api.get(pathB('zones', 'interval'))).body).to.not.have.property('timezone');
    const cron = await api.put(pathB('zones', 'calendar'), { cron: '0 7 * * *', paused: true });
    expect(cron.body).to.include({ timezone: 'UTC' });
    const refused = await api.put(pathB('zones', 'interval'), { every: '1h', timezone: 'Europe/Paris' });
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.body.error.message).to.match(/^timezone: .*cron/);
  });
});
