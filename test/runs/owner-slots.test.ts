import crypto from 'node:crypto';
import { expect } from 'chai';
import type { Registry } from 'prom-client';
import { api as apiFor, signedIn, useOwnWorkerAndApi } from '../helpers/api';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

/** How many provider calls the worker refused because their owner was at its cap. */
async function refusedCalls(metrics: Registry): Promise<number> {
  const metric = metrics.getSingleMetric('ptr_provider_calls_owner_busy_total');
  return metric ? ((await metric.get()).values[0]?.value ?? 0) : 0;
}

describe('runs: no owner holds more than WORKER_MAX_PROVIDER_CALLS_PER_OWNER provider calls on a worker', () => {
  const own = useOwnWorkerAndApi({ TEMPORAL_TASK_QUEUE: `owner-slots-${crypto.randomBytes(4).toString('hex')}`, WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '2' });

  it('lets another owner\'s call reach its model while one owner\'s slow calls hold their cap, and ends every run ready with no retry in its log', async function () {
    this.timeout(150_000);
    const { fake } = getStack();
    const flood = await signedIn('flood');
    const other = await signedIn('other');
    const floodApi = apiFor(flood.sessionId, own.url);
    const otherApi = apiFor(other.sessionId, own.url);
    await createTask(floodApi, 'default', 'slow');
    await createTask(otherApi, 'default', 'slow');

    // The flood's calls are held at the provider until released (then answered after a moment, so the last ones still
    // overlap); the other owner's is answered at once. The provider counts the flood's calls it holds at once.
    let holding = true;
    const held: Array<() => void> = [];
    let floodAtProvider = 0;
    let mostFloodAtProvider = 0;
    let floodAtProviderWhenOtherAsked: number | undefined;
    fake.script(async (req) => {
      const text = lastUserText(req);
      if (!text.startsWith('Say flood')) {
        floodAtProviderWhenOtherAsked = floodAtProvider;
        return openaiText(`echo: ${text}`);
      }
      floodAtProvider++;
      mostFloodAtProvider = Math.max(mostFloodAtProvider, floodAtProvider);
      try {
        if (holding) await new Promise<void>((release) => held.push(release));
        else await new Promise((r) => setTimeout(r, 500));
        return openaiText(`echo: ${text}`);
      } finally {
        floodAtProvider--;
      }
    });

    const floodUrl = await signedUrl(floodApi, 'default', 'slow');
    const floodRuns: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const trigger = await postSigned(floodUrl, { text: `flood ${i}` }, { 'run-id': `f${i}` });
      expect(trigger.status, trigger.text).to.equal(201);
      floodRuns.push(trigger.body.url as string);
    }
    await until('two of the flood\'s calls to be held at the provider', () => held.length >= 2);
    // The three others were refused (not waiting in a slot of the worker), and wait in their runs, shown running.
    await until('the three other calls of the flood to be refused', async () => (await refusedCalls(own.worker.worker.metrics)) >= 3);
    await until('the flood\'s five runs to be recorded running', async () => {
      const list = await floodApi.get('/api/runs/~/default/slow');
      return list.status === 200 && list.body.length === 5 && list.body.every((r: { status: string }) => r.status === 'running');
    });

    const otherTrigger = await postSigned(await signedUrl(otherApi, 'default', 'slow'), { text: 'other' }, { 'run-id': 'o1' });
    expect(otherTrigger.status, otherTrigger.text).to.equal(201);
    const otherRun = await waitForRun(otherApi, otherTrigger.body.url, 60_000);
    expect(otherRun.status).to.equal('ready');
    expect(otherRun.results.at(-1).lastMessage.content).to.equal('echo: Say other');
    expect(floodAtProviderWhenOtherAsked, 'the flood\'s calls held at the provider when the other owner\'s call came').to.equal(2);
    expect(held, 'the flood\'s calls still held when the other owner\'s run ended').to.have.length(2);

    holding = false;
    for (const release of held.splice(0)) release();
    for (const url of floodRuns) {
      const run = await waitForRun(floodApi, url, 90_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.match(/^echo: Say flood \d$/);
      const warned = run.results.filter((e: { msg: string; level?: number }) => /retrying/.test(e.msg) || (e.level ?? 0) >= 40);
      expect(warned, `${url}: no retry or warning in the run's log`).to.deep.equal([]);
    }
    expect(mostFloodAtProvider, 'the flood\'s calls at the provider at once, at most').to.equal(2);
  });
});
