import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { startWorkerProcess } from '../helpers/worker-process';
import { lastUserText, openaiText } from '../helpers/fake-provider';

describe('runs: durability', () => {
  const children: ChildProcess[] = [];
  beforeEach(() => getStack().fake.reset());
  afterEach(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    getStack().fake.reset();
  });

  it('completes a run whose worker was killed while it waited on the provider, losing and duplicating nothing', async function () {
    this.timeout(120_000);
    const { sessionId } = await signedIn();
    const { fake, env } = getStack();
    const queue = `durable-${crypto.randomBytes(4).toString('hex')}`;
    const workerEnv = { ...env, TEMPORAL_TASK_QUEUE: queue, LOG_LEVEL: 'info' };
    const api = await startApi({ TEMPORAL_TASK_QUEUE: queue, PROVIDER_HEARTBEAT_TIMEOUT_MS: '2000' });
    try {
      const client = apiFor(sessionId, api.url);
      await createTask(client, 'default', 'durable');
      let calls = 0;
      fake.script((req) => {
        calls++;
        if (calls === 1) return { hang: true };
        return openaiText(`survived: ${lastUserText(req)}`);
      });
      const first = await startWorkerProcess(workerEnv);
      children.push(first);
      const res = await postSigned(await signedUrl(client, 'default', 'durable'), { text: 'x' }, { 'run-id': 'd1' });
      expect(res.status).to.equal(201);
      // Kill only once this run's provider call is in flight on the first worker.
      while (calls === 0) await new Promise((r) => setTimeout(r, 50));
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      children.push(await startWorkerProcess(workerEnv));
      const run = await waitForRun(client, res.body.url, 90_000);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.equal('survived: Say x');
      const msgs = run.results.map((e: any) => e.msg);
      expect(msgs.filter((m: string) => m === 'run started')).to.have.length(1);
      expect(msgs.filter((m: string) => m === 'prompt')).to.have.length(1);
      expect(msgs.filter((m: string) => m === 'final answer')).to.have.length(1);
      expect(msgs.some((m: string) => /worker calling the provider was lost; retrying/.test(m))).to.equal(true);
      expect(fake.requests).to.have.length(2);
    } finally {
      await api.close();
    }
  });
});
