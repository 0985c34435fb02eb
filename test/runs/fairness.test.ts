import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn, type Api } from '../helpers/api';
import { waitForRun } from '../helpers/runs';
import { runWorkflowId } from '../../src/temporal/ids';
import { readFairnessWeight, writeFairnessWeight } from '../../src/store/user-weights';
import { createRuns } from '../../src/runs';
import { createScheduledRunActivities } from '../../activities/scheduled-run';

const root = path.resolve(__dirname, '../..');

/** `npm run users -- ...` as an operator runs it, against the stack's database. */
async function usersCli(args: string[]) {
  const tsx = path.join(root, 'node_modules/tsx/dist/cli.mjs');
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tsx, 'src/cli/users.ts', ...args], { cwd: root, env: { MONGO_URL: getStack().env.MONGO_URL! } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function putTask(api: Api, name: string, settings: Record<string, unknown> = {}) {
  const res = await api.put(`/api/tasks/~/default/${name}`, { runner: 'openai', openai: { prompt: 'Say {{ text }}', model: 'test-model' }, settings: { key: 'sk-test-key-0123456789abcdef', ...settings } });
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

/** Triggers the run (Variant B, through a signed URL's route) and waits for it to end. */
async function runTask(api: Api, task: string, run: string) {
  const signed = await api.post(`/api/tasks/~/default/${task}/signed`);
  expect(signed.status, signed.text).to.equal(200);
  const res = await fetch(signed.body.url, { method: 'POST', headers: { 'content-type': 'application/json', 'run-id': run }, body: JSON.stringify({ text: 'hi' }) });
  expect(res.status, await res.text()).to.equal(201);
}

/** The priority Temporal holds for the run's workflow. */
async function workflowPriority(owner: string, task: string, run: string) {
  const described = await getStack().temporal.workflow.getHandle(runWorkflowId({ owner, profile: 'default', task, run })).describe();
  return described.priority;
}

describe('runs: fair by owner (task queue priority and fairness)', function () {
  // The CLI's calls each start a TypeScript process.
  this.timeout(60_000);
  beforeEach(() => getStack().fake.reset());

  it('starts a run with its owner as fairness key, the weight the CLI set and its task\'s priority', async () => {
    const { api, username } = await signedIn('fair');
    const set = await usersCli(['set-weight', username, '3']);
    expect(set.code, set.stderr).to.equal(0);
    expect(set.stdout).to.contain(`${username}: fairness weight 3 (was 1)`);
    const shown = await usersCli(['show', username]);
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.stdout).to.match(/^fairness weight: 3$/m);

    await putTask(api, 'urgent', { priority: 1 });
    await runTask(api, 'urgent', 'u1');
    expect(await workflowPriority(username, 'urgent', 'u1')).to.deep.equal({ priorityKey: 1, fairnessKey: username, fairnessWeight: 3 });
    const run = await waitForRun(api, `http://x/api/runs/~/default/urgent/u1`);
    expect(run.status).to.equal('ready');
  });

  it('takes priority 3 and weight 1 by default, and a weight change reaches the next run', async () => {
    const { api, username } = await signedIn('fair');
    const { db, config } = getStack();
    await putTask(api, 'plain');
    await runTask(api, 'plain', 'p1');
    expect(await workflowPriority(username, 'plain', 'p1')).to.deep.equal({ priorityKey: 3, fairnessKey: username, fairnessWeight: 1 });

    expect(await writeFairnessWeight(db.models, username, 0.5)).to.equal(true);
    // Another process's change: the API's cache of weights holds an answer for at most TRIGGER_CACHE_MS.
    await new Promise((r) => setTimeout(r, config.TRIGGER_CACHE_MS + 50));
    await runTask(api, 'plain', 'p2');
    expect(await workflowPriority(username, 'plain', 'p2')).to.deep.equal({ priorityKey: 3, fairnessKey: username, fairnessWeight: 0.5 });
  });

  it('starts a schedule\'s run one priority below its task\'s, and never below 5', async () => {
    const { api, username } = await signedIn('fair');
    const { db, config, logger, temporal } = getStack();
    const activities = createScheduledRunActivities({ db, config, logger }, createRuns({ models: db.models, temporal, logger, config }));
    await putTask(api, 'nightly', { priority: 2 });
    await putTask(api, 'backfill', { priority: 5 });
    for (const [task, expected] of [['nightly', 3], ['backfill', 5]] as const) {
      const started = await activities.startScheduledRun({ identity: { owner: username, profile: 'default', task, run: 's1' }, payload: { text: 'hi' } });
      expect(started, task).to.not.equal(null);
      expect((await workflowPriority(username, task, 's1'))?.priorityKey, task).to.equal(expected);
    }
  });

  it('refuses a weight outside 0.001 to 1000 or not a number, and an unknown user, with a message and a non-zero exit', async () => {
    const { username } = await signedIn('fair');
    const bad = await usersCli(['set-weight', username, '5000']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('WEIGHT: expected a number from 0.001 to 1000, got "5000"');
    expect(await readFairnessWeight(getStack().db.models, username)).to.equal(1);
    const unknown = await usersCli(['set-weight', `${username}-nobody`, '2']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain(`no user "${username}-nobody"`);
  });
});
