import { expect } from 'chai';
import { ScheduleNotFoundError } from '@temporalio/client';
import { getStack } from '../helpers/stack';
import { signedIn, type Api } from '../helpers/api';
import { createTask, until, waitForRun } from '../helpers/runs';
import { taskScheduleId, type TaskScheduleRef } from '../../src/temporal/ids';

/** Schedules the tests made, deleted after them whatever happened (a schedule outlives the test run's worker otherwise). */
const made: TaskScheduleRef[] = [];
const pathB = (task: string, schedule = '') => `/api/tasks/~/default/${task}/schedules${schedule ? `/${schedule}` : ''}`;
const pathA = (task: string, schedule = '') => `/api/profiles/~/default/tasks/${task}/schedules${schedule ? `/${schedule}` : ''}`;

const describeSchedule = (ref: TaskScheduleRef) =>
  getStack().temporal.schedule.getHandle(taskScheduleId(ref)).describe().catch((err: unknown) => {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  });

async function put(api: Api, path: string, body: unknown, ref: TaskScheduleRef) {
  made.push(ref);
  return api.put(path, body);
}

/** A scheduled run's name as a time: `nightly-20261123T083000Z` → ms since the epoch. */
function nameTime(schedule: string, name: string): number {
  const m = new RegExp(`^${schedule}-(\\d{4})(\\d\\d)(\\d\\d)T(\\d\\d)(\\d\\d)(\\d\\d)Z$`).exec(name);
  expect(m, name).to.not.equal(null);
  const [, y, mo, d, h, mi, s] = m!.map(Number);
  return Date.UTC(y!, mo! - 1, d, h, mi, s);
}

/** The names of a task's runs, as its run list shows them. */
async function runNames(api: Api, task: string): Promise<string[]> {
  const res = await api.get(`/api/runs/~/default/${task}`);
  expect(res.status, res.text).to.equal(200);
  return (res.body as Array<{ name: string }>).map((r) => r.name);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('runs: schedules', () => {
  beforeEach(() => getStack().fake.reset());
  after(async () => {
    for (const ref of made) await getStack().temporal.schedule.getHandle(taskScheduleId(ref)).delete().catch(() => undefined);
  });

  it('runs a schedule every 2 s under names of their scheduled times; pausing stops it, a PUT changes it, DELETE removes it', async function () {
    this.timeout(90_000);
    const { api, username } = await signedIn('sch');
    await createTask(api, 'default', 'tick');
    const ref = { owner: username, profile: 'default', task: 'tick', schedule: 'often' };
    const created = await put(api, pathB('tick', 'often'), { every: '2s', payload: { text: 'tock' } }, ref);
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ name: 'often', every: '2s', paused: false });
    expect(created.body).to.not.have.property('timezone');
    expect(created.body.payload).to.deep.equal({ text: 'tock' });
    expect(created.body.next_action_times).to.have.length.above(0);

    // Runs named by their actions' times: whole seconds, 2 s apart (or a multiple of it where a run still going made
    // the schedule skip an action), until two consecutive actions have run.
    const gapsOf = (names: string[]) => {
      const times = names.map((n) => nameTime('often', n)).sort((x, y) => x - y);
      return times.slice(1).map((t, i) => t - times[i]!);
    };
    const names = await until('two consecutive scheduled runs', async () => {
      const all = (await runNames(api, 'tick')).filter((n) => n.startsWith('often-'));
      return all.length >= 3 && gapsOf(all).includes(2000) ? all : undefined;
    });
    for (const gap of gapsOf(names)) expect(gap % 2000, `gaps ${gapsOf(names)}`).to.equal(0);
    const run = await waitForRun(api, `http://x/api/runs/~/default/tick/${names[0]}`);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Say tock');

    const listed = await api.get(pathB('tick'));
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.schedules).to.have.length(1);
    const [schedule] = listed.body.schedules;
    expect(schedule).to.include({ name: 'often', every: '2s', paused: false });
    expect(schedule.recent_runs).to.have.length.above(0);
    const recent = schedule.recent_runs.at(-1);
    expect(recent.url).to.equal(`${getStack().config.PUBLIC_URL}/api/runs/${username}/default/tick/${recent.name}`);
    expect((await api.get(new URL(recent.url).pathname)).status).to.equal(200);

    // Paused: once the action under way (if any) has ended, no new run over three intervals.
    const paused = await api.put(pathB('tick', 'often'), { every: '2s', payload: { text: 'tock' }, paused: true });
    expect(paused.status, paused.text).to.equal(200);
    expect(paused.body.paused).to.equal(true);
    await until('no action under way', async () => (await describeSchedule(ref))?.info.runningActions.length === 0);
    const before = (await runNames(api, 'tick')).length;
    await sleep(6_500);
    expect((await runNames(api, 'tick')).length, 'runs after pausing').to.equal(before);

    // PUT again: the same schedule, changed.
    const changed = await api.put(pathB('tick', 'often'), { cron: '30 8 * * 1-5', timezone: 'europe/paris', payload: { text: 'later' } });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body).to.include({ cron: '30 8 * * 1-5', timezone: 'Europe/Paris', paused: false });
    expect(changed.body).to.not.have.property('every');
    expect(changed.body.payload).to.deep.equal({ text: 'later' });
    const described = await describeSchedule(ref);
    expect(described?.spec.intervals).to.deep.equal([]);
    expect(described?.spec.timezone).to.equal('Europe/Paris');
    expect(described?.state.paused).to.equal(false);

    const deleted = await api.delete(pathB('tick', 'often'));
    expect(deleted.status, deleted.text).to.equal(204);
    expect(await describeSchedule(ref), 'the Temporal schedule').to.equal(null);
    expect((await api.delete(pathB('tick', 'often'))).status).to.equal(404);
    expect((await api.get(pathB('tick', 'often'))).status).to.equal(404);
    expect((await api.get(pathB('tick'))).body).to.deep.equal({ schedules: [] });
  });

  it('takes parameters on Variant A paths, and a trigger starts a run now with them', async () => {
    const { api, username } = await signedIn('sch');
    const { config } = getStack();
    const task = await api.put('/api/profiles/~/default/tasks/greet', {
      runner: 'openai',
      openai: { prompt: 'Hello {{ name }}', model: config.VARIANT_A_MODEL },
      settings: { key: 'sk-a-0123456789abcdef' },
    });
    expect(task.status, task.text).to.equal(201);
    const ref = { owner: username, profile: 'default', task: 'greet', schedule: 'morning' };
    const created = await put(api, pathA('greet', 'morning'), { cron: '0 7 * * *', timezone: 'America/New_York', parameters: { name: 'Ann' } }, ref);
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.include({ name: 'morning', cron: '0 7 * * *', timezone: 'America/New_York', paused: false });
    expect(created.body.parameters).to.deep.equal({ name: 'Ann' });
    expect(created.body).to.not.have.property('payload');
    // 07:00 in New York is 11:00 or 12:00 UTC.
    expect(new Date(created.body.next_action_times[0]).getUTCHours()).to.be.oneOf([11, 12]);

    const listed = await api.get(pathA('greet'));
    expect(listed.body.schedules.map((s: any) => s.name)).to.deep.equal(['morning']);

    const triggered = await api.post(pathA('greet', 'morning/trigger'));
    expect(triggered.status, triggered.text).to.equal(202);
    const url: string = triggered.body.url;
    expect(url).to.match(new RegExp(`^${config.PUBLIC_URL}/api/profiles/${username}/default/tasks/greet/runs/morning-\\d{8}T\\d{6}Z$`));
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.equal('echo: Hello Ann');
    expect((await api.post(pathA('greet', 'evening/trigger'))).status).to.equal(404);
  });

  it('answers 400 naming the field for bad schedules, and keeps nothing of them', async () => {
    const { api, username } = await signedIn('sch');
    const { config } = getStack();
    await createTask(api, 'default', 'strict');
    const a = await api.put('/api/profiles/~/default/tasks/strict-a', { runner: 'openai', openai: { prompt: 'p', model: config.VARIANT_A_MODEL }, settings: { key: 'sk-a-0123' } });
    expect(a.status, a.text).to.equal(201);
    const cases: Array<[string, unknown, RegExp]> = [
      [pathB('strict', 'both'), { cron: '* * * * *', every: '1m' }, /^every: .*not both/],
      [pathB('strict', 'neither'), { payload: {} }, /^cron: required/],
      [pathB('strict', 'bad-every'), { every: '5 minutes' }, /^every: expected/],
      [pathB('strict', 'zero'), { every: '0s' }, /^every: /],
      [pathB('strict', 'fraction'), { every: '1.5s' }, /^every: /],
      [pathB('strict', 'x'.repeat(41)), { every: '1h' }, /^path\.schedule: .*40 characters/],
      [pathB('strict', 'tz'), { every: '1h', timezone: 'Mars/Olympus' }, /^timezone: expected an IANA/],
      [pathB('strict', 'bad-cron'), { cron: 'every tuesday' }, /^cron: /],
      [pathB('strict', 'range'), { cron: '61 * * * *' }, /^cron: /],
      [pathB('strict', 'paused'), { every: '1h', paused: 'yes' }, /^paused: /],
      [pathB('strict', 'payload'), { every: '1h', payload: ['a'] }, /^payload: /],
      [pathA('strict-a', 'nested'), { every: '1h', parameters: { name: { first: 'Ann' } } }, /^parameters\.name: expected a string/],
      [pathA('strict-a', 'number'), { every: '1h', parameters: { n: 1 } }, /^parameters\.n: expected a string/],
      [pathA('strict-a', 'payload'), { every: '1h', payload: { name: 'Ann' } }, /^body: .*payload/],
    ];
    for (const [path, body, message] of cases) {
      const schedule = path.split('/').at(-1)!;
      const res = await put(api, path, body, { owner: username, profile: 'default', task: path.includes('strict-a') ? 'strict-a' : 'strict', schedule });
      expect(res.status, `${path} ${res.text}`).to.equal(400);
      expect(res.body.error.message, path).to.match(message);
    }
    expect(await describeSchedule({ owner: username, profile: 'default', task: 'strict', schedule: 'bad-cron' }), 'a refused cron').to.equal(null);
    expect((await api.get(pathB('strict'))).body).to.deep.equal({ schedules: [] });
    // A 40-character name is fine.
    const longest = await put(api, pathB('strict', 'y'.repeat(40)), { every: '1h', paused: true }, { owner: username, profile: 'default', task: 'strict', schedule: 'y'.repeat(40) });
    expect(longest.status, longest.text).to.equal(201);
  });

  it('deletes a task\'s schedules with the task', async () => {
    const { api, username } = await signedIn('sch');
    await createTask(api, 'default', 'doomed');
    const refs = ['one', 'two'].map((schedule) => ({ owner: username, profile: 'default', task: 'doomed', schedule }));
    for (const ref of refs) expect((await put(api, pathB('doomed', ref.schedule), { every: '1h', paused: true }, ref)).status).to.equal(201);
    expect((await api.get(pathB('doomed'))).body.schedules.map((s: any) => s.name)).to.deep.equal(['one', 'two']);
    expect((await api.delete('/api/tasks/~/default/doomed')).status).to.equal(204);
    for (const ref of refs) expect(await describeSchedule(ref), ref.schedule).to.equal(null);
    expect((await api.get(pathB('doomed'))).status).to.equal(404);
    await createTask(api, 'default', 'doomed');
    expect((await api.get(pathB('doomed'))).body).to.deep.equal({ schedules: [] });
  });

  it('answers 404 for another user\'s task and for a task that does not exist', async () => {
    const owner = await signedIn('sch');
    const other = await signedIn('sch');
    await createTask(owner.api, 'default', 'mine');
    const ref = { owner: owner.username, profile: 'default', task: 'mine', schedule: 'daily' };
    expect((await put(owner.api, pathB('mine', 'daily'), { every: '1d', paused: true }, ref)).status).to.equal(201);
    const theirs = (rest: string) => `/api/tasks/${owner.username}/default/mine/schedules${rest}`;
    const theirsA = (rest: string) => `/api/profiles/${owner.username}/default/tasks/mine/schedules${rest}`;
    for (const res of [
      await other.api.get(theirs('')),
      await other.api.get(theirs('/daily')),
      await other.api.put(theirs('/daily'), { every: '1h' }),
      await other.api.delete(theirs('/daily')),
      await other.api.post(theirs('/daily/trigger')),
      await other.api.get(theirsA('')),
      await other.api.put(theirsA('/daily'), { every: '1h' }),
      await other.api.get(pathB('mine')),
      await other.api.put(pathB('mine', 'daily'), { every: '1h' }),
      await owner.api.get('/api/profiles/~/other/tasks/mine/schedules'),
    ]) {
      expect(res.status, res.text).to.equal(404);
    }
    const still = await describeSchedule(ref);
    expect(still?.spec.intervals?.map((i) => i.every)).to.deep.equal([86_400_000]);
  });
});
