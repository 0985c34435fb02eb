import crypto from 'node:crypto';
import { expect } from 'chai';
import { WorkflowNotFoundError } from '@temporalio/client';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { runWorkflowId } from '../../src/temporal/ids';
import { connectDb } from '../../src/store/connect';

/** Whether Temporal holds a workflow for the run (started, whether or not it has ended). */
async function hasWorkflow(owner: string, task: string, run: string): Promise<boolean> {
  try {
    await getStack().temporal.workflow.getHandle(runWorkflowId({ owner, profile: 'default', task, run })).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

async function putTask(api: Api, name: string, priority?: number) {
  const res = await api.put(`/api/tasks/~/default/${name}`, {
    runner: 'openai',
    openai: { prompt: 'Say {{ text }}', model: 'test-model' },
    settings: { key: 'sk-test-key-0123456789abcdef', ...(priority ? { priority } : {}) },
  });
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

describe('runs: admission (STARTED_RUNS_PER_USER): one owner\'s flood waits in the store, not in Temporal', () => {
  const own = useOwnWorkerAndApi({ TEMPORAL_TASK_QUEUE: `admission-${crypto.randomBytes(4).toString('hex')}`, STARTED_RUNS_PER_USER: '2' });

  it('starts at most two of an owner\'s runs, starts another owner\'s at once, keeps a read from starting a waiting run, and starts the waiting ones as runs end, highest priority first', async function () {
    this.timeout(180_000);
    const { fake } = getStack();
    const flood = await signedIn('adm-a');
    const other = await signedIn('adm-b');
    const floodApi = apiFor(flood.sessionId, own.url);
    const otherApi = apiFor(other.sessionId, own.url);
    await putTask(floodApi, 'slow');
    await putTask(floodApi, 'urgent', 1);
    await createTask(otherApi, 'default', 'slow');

    // The flood's calls are held at the provider until released one by one; the other owner's answered at once.
    const held: Array<{ text: string; release: () => void }> = [];
    const reached: string[] = [];
    fake.script(async (req) => {
      const text = lastUserText(req);
      reached.push(text);
      if (text.startsWith('Say flood')) await new Promise<void>((release) => held.push({ text, release }));
      return openaiText(`echo: ${text}`);
    });

    const slowUrl = await signedUrl(floodApi, 'default', 'slow');
    const paths: Record<string, string> = {};
    for (let i = 1; i <= 5; i++) {
      const trigger = await postSigned(slowUrl, { text: `flood ${i}` }, { 'run-id': `f${i}` });
      expect(trigger.status, trigger.text).to.equal(201);
      paths[`f${i}`] = new URL(trigger.body.url as string).pathname;
    }
    await until('two of the flood\'s calls to be held at the provider', () => held.length >= 2);
    const started = [];
    for (let i = 1; i <= 5; i++) if (await hasWorkflow(flood.username, 'slow', `f${i}`)) started.push(`f${i}`);
    expect(started, 'the flood\'s runs with a workflow').to.deep.equal(['f1', 'f2']);
    for (const run of ['f3', 'f4', 'f5']) {
      const res = await floodApi.get(paths[run]!);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.status, `${run} waits, shown pending`).to.equal('pending');
    }

    // A later trigger of the same name answers the same run and does not start it.
    const again = await postSigned(slowUrl, { text: 'flood 3' }, { 'run-id': 'f3' });
    expect(again.status, again.text).to.equal(200);
    expect(await hasWorkflow(flood.username, 'slow', 'f3')).to.equal(false);

    // Another owner's run starts at once and ends while the flood's are held.
    const otherTrigger = await postSigned(await signedUrl(otherApi, 'default', 'slow'), { text: 'other' }, { 'run-id': 'o1' });
    expect(otherTrigger.status, otherTrigger.text).to.equal(201);
    const otherRun = await waitForRun(otherApi, otherTrigger.body.url, 60_000);
    expect(otherRun.status).to.equal('ready');

    // A run read after the time a lost start is healed (5 s) is still waiting: reads do not start it.
    await new Promise((r) => setTimeout(r, 5_500));
    expect((await floodApi.get(paths.f4!)).body.status).to.equal('pending');
    expect(await hasWorkflow(flood.username, 'slow', 'f4')).to.equal(false);

    // A waiting run cancelled ends at once and never starts.
    expect((await floodApi.post(`${paths.f5}/cancel`)).status).to.equal(202);
    const cancelled = await waitForRun(floodApi, `http://x${paths.f5}`, 30_000);
    expect(cancelled.status).to.equal('error');
    expect(cancelled.results.at(-1).error).to.equal(`cancelled by ${flood.username}`);

    // A priority-1 run triggered now waits too, and starts before the older priority-3 ones.
    const urgent = await postSigned(await signedUrl(floodApi, 'default', 'urgent'), { text: 'urgent' }, { 'run-id': 'u1' });
    expect(urgent.status, urgent.text).to.equal(201);
    expect(await hasWorkflow(flood.username, 'urgent', 'u1')).to.equal(false);
    const before = reached.length;
    held.shift()!.release();
    await until('the next call at the provider', () => reached.length > before);
    expect(reached[before], 'the first call after a place was freed').to.equal('Say urgent');

    // Released one at a time as they come: every run ends ready; the cancelled one never had a workflow.
    const releaser = setInterval(() => held.shift()?.release(), 50);
    try {
      for (const run of ['f1', 'f2', 'f3', 'f4']) {
        const ended = await waitForRun(floodApi, `http://x${paths[run]}`, 60_000);
        expect(ended.status, JSON.stringify(ended.results)).to.equal('ready');
        expect(ended.results.at(-1).lastMessage.content).to.equal(`echo: Say flood ${run.slice(1)}`);
      }
      expect((await waitForRun(floodApi, urgent.body.url, 60_000)).status).to.equal('ready');
    } finally {
      clearInterval(releaser);
    }
    expect(await hasWorkflow(flood.username, 'slow', 'f5')).to.equal(false);

    // Nothing is left waiting or holding a place (the raw store).
    const db = await connectDb(getStack().env.MONGO_URL!);
    try {
      await until('the flood\'s started places to be given back', async () => (await db.models.StartedRun.countDocuments({ owner: flood.username })) === 0);
      expect(await db.models.WaitingStart.countDocuments({ owner: flood.username })).to.equal(0);
    } finally {
      await db.close();
    }
  });
});
