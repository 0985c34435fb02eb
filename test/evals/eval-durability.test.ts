import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { startWorkerProcess } from '../helpers/worker-process';
import { openaiText, type RecordedRequest } from '../helpers/fake-provider';

const promptOf = (req: RecordedRequest) => String((req.body.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'user')?.content ?? '');

describe('evals: durability', () => {
  const children: ChildProcess[] = [];
  beforeEach(() => getStack().fake.reset());
  afterEach(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    getStack().fake.reset();
  });

  it('loses no replay when its worker is killed during an eval', async function () {
    this.timeout(150_000);
    const { sessionId } = await signedIn('evd');
    const { fake, env } = getStack();
    const queue = `eval-durable-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { TEMPORAL_TASK_QUEUE: queue, PROVIDER_HEARTBEAT_TIMEOUT_MS: '2000' };
    const workerEnv = { ...env, ...settings, LOG_LEVEL: 'info' };
    const api = await startApi(settings);
    try {
      const client = apiFor(sessionId, api.url);
      await createTask(client, 'default', 't', { prompt: 'city {{ n }}' });
      // Replays (their prompt starts "json") take a second each, so the kill lands mid-eval.
      fake.script(async (req) => {
        const prompt = promptOf(req);
        if (!prompt.startsWith('json')) return openaiText(`plain ${prompt}`);
        await new Promise((r) => setTimeout(r, 1_000));
        return openaiText(JSON.stringify({ city: 'Paris' }));
      });
      const first = await startWorkerProcess(workerEnv);
      children.push(first);
      const url = await signedUrl(client, 'default', 't');
      for (let i = 0; i < 6; i++) {
        const res = await postSigned(url, { n: i }, { 'run-id': `r${i}` });
        expect(res.status, res.text).to.equal(201);
        await waitForRun(client, res.body.url);
      }
      const res = await client.post('/api/tasks/~/default/t/evals', {
        runs: { last: 6 },
        variants: [{ name: 'json', prompt: 'json city {{ n }}' }],
        checks: [{ type: 'json_schema', schema: { type: 'object', required: ['city'] } }],
        concurrency: 2,
      });
      expect(res.status, res.text).to.equal(201);
      const path = new URL(res.body.url).pathname;
      // Kill once some replays were made and the rest are still to come.
      await until('some replays made', async () => {
        const e = (await client.get(path)).body;
        return e.scorecard[0].diffs.some((d: { status: string }) => d.status !== 'waiting');
      });
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      children.push(await startWorkerProcess(workerEnv));

      const done = await until('the eval to end', async () => {
        const e = (await client.get(path)).body;
        return ['ready', 'error', 'cancelled'].includes(e.status) ? e : undefined;
      }, 120_000);
      expect(done.status, JSON.stringify(done)).to.equal('ready');
      expect(done.scorecard[0]).to.deep.include({ runs: { done: 6, total: 6 }, checks: { passed: 6, total: 6 } });
      // Every replay is there once, ready.
      const runs = (await client.get('/api/runs/~/default/t?limit=100')).body as Array<{ status: string; replay_of?: string }>;
      const replays = runs.filter((r) => r.replay_of !== undefined);
      expect(replays).to.have.length(6);
      expect(replays.every((r) => r.status === 'ready')).to.equal(true);
    } finally {
      await api.close();
    }
  });
});
