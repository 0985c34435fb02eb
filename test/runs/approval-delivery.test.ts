import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createApp } from '../../src/http/app';
import { connectTemporal } from '../../src/temporal/client';
import { api as apiFor, signedIn } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

describe('runs: a decision the run cannot take', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('answers a decision and an input 503, nothing decided, while the run\'s workflow tasks fail (a broken build on its worker); then takes it', async function () {
    this.timeout(120_000);
    const stack = getStack();
    const queue = `delivery-${crypto.randomBytes(4).toString('hex')}`;
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue });
    // The API with its Temporal client as the service makes it (the request deadline sees its calls), not the tests'.
    const listening = http.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => listening.once('listening', r));
    const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const config = stack.configWith({ TEMPORAL_TASK_QUEUE: queue, PUBLIC_URL: url });
    const temporal = await connectTemporal(config);
    listening.on('request', createApp({ config, logger: stack.logger, db: stack.db, keyring: stack.keyring, temporal }).callback());
    const server = { url, close: () => new Promise((r) => (listening.closeAllConnections(), listening.close(r))).then(() => temporal.connection.close()) };
    const { username, sessionId } = await signedIn();
    const api = apiFor(sessionId, server.url);
    let broken: { shutdown(): void; run: Promise<void>; connection: NativeConnection } | undefined;
    try {
      await installServlet(api, username, 'greeter', 'hello');
      const gated = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'hello', settings: { approval: '*' } });
      expect(gated.status, gated.text).to.equal(200);
      await createTask(api, 'default', 'gated');
      stack.fake.script([openaiToolCall([{ id: 'c1', name: 'hello__greet', arguments: { name: 'Ann' } }]), openaiText('done')]);
      const signed = new URL(await signedUrl(api, 'default', 'gated'));
      const started = await postSigned(`${server.url}${signed.pathname}${signed.search}`, {}, { 'run-id': 'r1' });
      expect(started.status, started.text).to.equal(201);
      const runPath = new URL(started.body.url).pathname;
      const approval = await until('an approval entry', async () => {
        const run = (await api.get(runPath)).body;
        return run.status === 'pending' ? run.results.find((e: any) => e.approval)?.approval : undefined;
      });
      // The run's worker is replaced by one running a broken build: every workflow task of the run now fails.
      await worker.stop();
      const connection = await NativeConnection.connect({ address: stack.config.TEMPORAL_ADDRESS });
      const w = await Worker.create({ connection, namespace: stack.config.TEMPORAL_NAMESPACE, taskQueue: queue, workflowsPath: path.join(__dirname, '../fixtures/broken-workflows') });
      broken = { shutdown: () => w.shutdown(), run: w.run(), connection };
      // The first decision may wait on the stopped worker's queue until the request's deadline (503 then, the update
      // going on unheard); once Temporal holds the run's task failed, every decision is refused at once.
      const refused = await until('the decision refused', async () => {
        const res = await api.post(`${runPath}/approvals/${approval.id}`, { approve: true });
        expect(res.status, res.text).to.equal(503);
        return /did not take the decision/.test(res.body.error.message) ? res : undefined;
      }, 60_000);
      expect(refused.body.error).to.deep.include({ code: 'temporal_unavailable' });
      expect(refused.body.error.message).to.match(/did not take the decision: Temporal aborted or refused it 5 times .*nothing was decided, send it again/);
      expect(refused.headers.get('retry-after')).to.equal('1');
      // An answer to an input asks the workflow first (a query): refused as well, and the run's read is served.
      const input = await api.post(`${runPath}/inputs/i-1`, { action: 'decline' });
      expect(input.status, input.text).to.equal(503);
      expect(input.body.error.message).to.match(/nothing was answered, send it again/);
      const read = await api.get(runPath);
      expect(read.status, read.text).to.equal(200);
      expect(read.body.status).to.equal('pending');
      // Nothing was lost: with a good build back on the queue, the run still waits for the decision, takes it sent
      // again, and ends ready.
      broken.shutdown();
      await broken.run;
      await broken.connection.close();
      broken = undefined;
      const again = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue });
      try {
        const taken = await until('the decision to be taken', async () => {
          const res = await api.post(`${runPath}/approvals/${approval.id}`, { approve: true });
          return res.status === 503 ? undefined : res;
        }, 90_000);
        expect(taken.status, taken.text).to.equal(202);
        const run = await waitForRun(api, started.body.url);
        expect(run.status, JSON.stringify(run.results)).to.equal('ready');
        expect(run.results.filter((e: any) => /^approved by /.test(e.msg))).to.have.length(1);
      } finally {
        await again.stop();
      }
    } finally {
      broken?.shutdown();
      await broken?.run;
      await broken?.connection.close();
      await server.close();
      await worker.stop().catch(() => undefined);
    }
  });
});
