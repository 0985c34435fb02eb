import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';
import { createTask } from '../helpers/runs';
import { taskScheduleId, type TaskScheduleRef } from '../../src/temporal/ids';
import { MAX_SCHEDULES_PER_TASK } from '../../src/temporal/task-schedules';

/** Schedules the tests made, deleted after them whatever happened (a schedule outlives the test run's worker otherwise). */
const made: TaskScheduleRef[] = [];
const pathB = (task: string, schedule = '') => `/api/tasks/~/default/${task}/schedules${schedule ? `/${schedule}` : ''}`;

/** The API's last logged request failure, to say why a status was not the one expected. */
const lastFailure = () => getStack().logs.lines.filter((l) => l.includes('request failed')).slice(-1)[0] ?? '(none logged)';

describe('runs: schedules under concurrent requests', () => {
  after(async () => {
    for (const ref of made) await getStack().temporal.schedule.getHandle(taskScheduleId(ref)).delete().catch(() => undefined);
  });

  it('answers reads racing a delete with the schedule as it was or 404 (or 503 naming Temporal when it is slow), never a 500', async function () {
    this.timeout(120_000);
    const { api, username } = await signedIn('schr');
    await createTask(api, 'default', 'race');
    const statuses: number[] = [];
    for (let round = 0; round < 8; round++) {
      const schedule = `k${round}`;
      made.push({ owner: username, profile: 'default', task: 'race', schedule });
      const created = await api.put(pathB('race', schedule), { every: '1h', paused: true });
      expect(created.status, created.text).to.equal(201);
      const reads = Array.from({ length: 12 }, (_, i) => new Promise((r) => setTimeout(r, i * 3)).then(() => api.get(pathB('race', schedule))));
      const lists = Array.from({ length: 4 }, (_, i) => new Promise((r) => setTimeout(r, i * 5)).then(() => api.get(pathB('race'))));
      const [deleted, ...answers] = await Promise.all([api.delete(pathB('race', schedule)), ...reads, ...lists]);
      expect(deleted.status, deleted.text).to.equal(204);
      for (const res of answers) {
        statuses.push(res.status);
        // A Temporal too slow to answer in time (a loaded machine) is a 503 naming it, which a client retries; the race
        // itself must never give anything else: not a 500, not another error of Temporal's.
        if (res.status === 503) expect(res.body.error.code, res.text).to.equal('temporal_unavailable');
        else expect(res.status, `${res.text} ${lastFailure()}`).to.be.oneOf([200, 404]);
        if (res.status === 200 && res.body.name) expect(res.body).to.include({ name: schedule, every: '1h', paused: true });
      }
      expect((await api.get(pathB('race', schedule))).status).to.equal(404);
    }
    expect(statuses, 'some reads came before the delete').to.include(200);
  });

  it(`creates no more than ${MAX_SCHEDULES_PER_TASK} schedules of a task however many PUTs arrive at once`, async function () {
    this.timeout(120_000);
    const { api, username } = await signedIn('schr');
    const names = Array.from({ length: 30 }, (_, i) => `lim${i}`);
    // A few tasks, each crowded once: a count that is not atomic lets some crowd through past the limit.
    for (const task of ['crowd', 'crowd2', 'crowd3']) {
      await createTask(api, 'default', task);
      for (const schedule of names) made.push({ owner: username, profile: 'default', task, schedule });
      const answers = await Promise.all(names.map((schedule) => api.put(pathB(task, schedule), { every: '1h', paused: true })));
      for (const res of answers) {
        expect(res.status, `${res.text} ${lastFailure()}`).to.be.oneOf([201, 409]);
        if (res.status === 409) expect(res.body.error.code).to.equal('too_many_schedules');
      }
      expect(answers.filter((res) => res.status === 201).length, `${task}: schedules created`).to.equal(MAX_SCHEDULES_PER_TASK);
    }
    const listed = await api.get(pathB('crowd'));
    expect(listed.body.schedules, 'schedules listed').to.have.length(MAX_SCHEDULES_PER_TASK);
    // A place is given back with its schedule: one more can be made once one is deleted.
    const one = listed.body.schedules[0].name as string;
    expect((await api.delete(pathB('crowd', one))).status).to.equal(204);
    const refused = names.find((n) => !listed.body.schedules.some((s: { name: string }) => s.name === n))!;
    const again = await api.put(pathB('crowd', refused), { every: '1h', paused: true });
    expect(again.status, again.text).to.equal(201);
    expect((await api.put(pathB('crowd', one), { every: '1h', paused: true })).status).to.equal(409);
    // A PUT of an existing schedule is its update, never refused for the count.
    expect((await api.put(pathB('crowd', refused), { every: '2h', paused: true })).status).to.equal(200);
  });
});
