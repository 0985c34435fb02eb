import crypto from 'node:crypto';
import http from 'node:http';
import { Types } from 'mongoose';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { checkUrl } from '../../src/net/address-guard';
import { parseNetworkPolicy } from '../../src/net/network-policy';
import { createWebhookDeliveryActivities, webhookPolicy } from '../../activities/webhook-delivery';
import { rotateSecrets } from '../../src/store/key-rotation';
import { claimLiveRun } from '../../src/store/live-runs';
import { recordOutsideEnd } from '../../src/runs/recorder';
import { findRun, insertRun, runWorkflowId } from '../../src/store/runs';
import { findTask } from '../../src/store/tasks';
import { deadlineInterceptor } from '../../src/temporal/client';
import { open, type SealedSecret } from '../../src/store/secrets';
import { DELIVERIES_KEPT, listDeliveries, recordDeliveryAttempt } from '../../src/store/webhooks';
import { reconcileScheduleId } from '../../src/temporal/ids';
import { announceRunClosed, retryDeferredAnnouncements, startWebhookDelivery, webhookDeliveryWorkflowId } from '../../src/runs/announce';
import { workflowBundle } from '../../src/temporal/worker';
import { api as apiFor, signedIn, startApi, type Api } from '../helpers/api';
import { providerError } from '../helpers/fake-provider';
import { historyText, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { freePort } from '../helpers/net';
import { getStack, type RunningWorker } from '../helpers/stack';

/**
 * A webhook receiver on loopback: records every POST, answers with the next scripted status (then 200; a 3xx sends
 * to `/moved`), or never answers when `silent`.
 */
async function startReceiver(options: { silent?: boolean } = {}) {
  const received: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
  const answers: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ url: req.url!, headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      if (options.silent) return;
      const status = answers.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain', ...(status >= 300 && status < 400 ? { location: '/moved' } : {}) });
      res.end(status === 200 ? 'ok' : 'receiver is down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    answers,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const task = (webhook?: unknown, extra: Record<string, unknown> = {}) => ({
  runner: 'openai',
  openai: { prompt: 'Say {{ text }}', model: 'test-model' },
  settings: { key: 'sk-test-key-0123456789abcdef' },
  ...(webhook === undefined ? {} : { webhook }),
  ...extra,
});

const clientSecret = () => `whsec_${crypto.randomBytes(32).toString('base64')}`;

describe('runs: completion webhooks', function () {
  this.timeout(60_000);
  let worker: RunningWorker;
  let server: { url: string; close(): Promise<void> };
  let receiver: Receiver;
  // Loopback is refused by the network guard; WEBHOOK_ALLOWLIST opens it for this worker's webhooks (only).
  const overrides = { WEBHOOK_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_INITIAL_MS: '200' };
  const queue = `webhooks-${crypto.randomBytes(4).toString('hex')}`;

  before(async () => {
    const stack = getStack();
    worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, ...overrides });
    server = await startApi({ TEMPORAL_TASK_QUEUE: queue, ...overrides });
  });
  after(async () => {
    await server?.close();
    await worker?.stop();
  });
  beforeEach(async () => {
    getStack().fake.reset();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    getStack().fake.reset();
    await receiver.close();
  });

  const user = async () => {
    const { sessionId, username } = await signedIn('hook');
    return { username, api: apiFor(sessionId, server.url) };
  };
  const trigger = async (api: Api, name: string, run: string) => {
    const res = await postSigned(await signedUrl(api, 'default', name), { text: run }, { 'run-id': run });
    expect(res.status, res.text).to.equal(201);
    return res.body.url as string;
  };
  const deliveries = async (api: Api, name: string, count: number) =>
    until(`${count} delivery attempts`, async () => {
      const res = await api.get(`/api/tasks/~/default/${name}/webhook/deliveries`);
      expect(res.status, res.text).to.equal(200);
      return res.body.deliveries.length >= count ? (res.body.deliveries as any[]) : undefined;
    });

  it('makes a secret when the task gives none, shows it in that answer only, and reads show that one is set', async () => {
    const { api, username } = await user();
    const { db } = getStack();
    const created = await api.put('/api/tasks/~/default/made', task({ url: receiver.url }));
    expect(created.status, created.text).to.equal(201);
    const secret: string = created.body.webhook.secret;
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).to.have.length(32);
    expect(created.body.webhook).to.deep.equal({ url: receiver.url, secret_set: true, secret });

    const read = await api.get('/api/tasks/~/default/made');
    expect(read.body.webhook).to.deep.equal({ url: receiver.url, secret_set: true });
    const listed = await api.get('/api/tasks/~/default');
    expect(listed.body.find((t: any) => t.name === 'made').webhook).to.deep.equal({ url: receiver.url, secret_set: true });

    // A save without `webhook` keeps it (as `settings.key`); one with only a URL keeps the secret; neither shows it.
    const kept = await api.put('/api/tasks/~/default/made', { ...task(), openai: { prompt: 'Other {{ text }}', model: 'test-model' } });
    expect(kept.status, kept.text).to.equal(200);
    expect(kept.body.webhook).to.deep.equal({ url: receiver.url, secret_set: true });
    const moved = await api.put('/api/tasks/~/default/made', task({ url: `${receiver.url}/moved`, secret_set: true }));
    expect(moved.body.webhook).to.deep.equal({ url: `${receiver.url}/moved`, secret_set: true });

    // Sealed like `settings.key`: the stored document holds a ciphertext, never the secret.
    const raw = await db.conn.db!.collection('tasks').findOne({ owner: username, name: 'made' });
    expect(raw!.webhook.secret).to.have.keys('kid', 'iv', 'tag', 'data');
    expect(JSON.stringify(raw)).to.not.contain(secret.slice('whsec_'.length));

    const removed = await api.put('/api/tasks/~/default/made', task(null));
    expect(removed.status).to.equal(200);
    expect(removed.body).to.not.have.property('webhook');
    expect((await api.get('/api/tasks/~/default/made')).body).to.not.have.property('webhook');

    // Variant A's task path takes it too, and so does the short form.
    const a = await api.put('/api/profiles/~/default/tasks/made-a', { ...task({ url: receiver.url }), openai: { prompt: 'p', model: getStack().config.VARIANT_A_MODEL } });
    expect(a.status, a.text).to.equal(201);
    expect(a.body.webhook.secret).to.match(/^whsec_/);
    const short = await api.put('/api/tasks/~/default/made-short', { provider: 'openai', prompt: 'p', settings: { key: 'sk-x' }, webhook: { url: receiver.url } });
    expect(short.status, short.text).to.equal(201);
    expect(short.body.webhook.secret).to.match(/^whsec_/);
  });

  it('re-seals webhook secrets when the master key rotates', async () => {
    const { api, username } = await user();
    const { db, keyring: original } = getStack();
    const secret = (await api.put('/api/tasks/~/default/resealed', task({ url: receiver.url }))).body.webhook.secret as string;
    const stored = async () => (await db.models.Task.findOne({ owner: username, name: 'resealed' }).lean())!.webhook!.secret as SealedSecret;
    const rotated = { current: { id: 'k-webhooks', key: crypto.randomBytes(32) }, retired: [original.current, ...original.retired] };
    try {
      const counts = await rotateSecrets(db.models, rotated);
      expect(counts.find((c) => c.collection === 'tasks.webhook')!.rotated).to.be.at.least(1);
      expect((await stored()).kid).to.equal('k-webhooks');
      expect(open(rotated, await stored())).to.equal(secret);
    } finally {
      // Back under the stack's key, which the running API and workers have.
      await rotateSecrets(db.models, { current: original.current, retired: [rotated.current] });
    }
    expect(open(original, await stored())).to.equal(secret);
  });

  it('keeps a task\'s latest 100 attempts, newest first, in one document read by _id', async () => {
    const { db } = getStack();
    const taskId = new Types.ObjectId();
    const start = Date.now();
    for (let i = 0; i < DELIVERIES_KEPT + 30; i++) {
      await recordDeliveryAttempt(db.models, taskId, `k${i}`, { run: `r${i}`, attempt: 1, status: 200, at: new Date(start + i) });
    }
    const listed = await listDeliveries(db.models, taskId);
    expect(listed).to.have.length(DELIVERIES_KEPT);
    expect(listed[0]).to.deep.equal({ run: `r${DELIVERIES_KEPT + 29}`, attempt: 1, status: 200, at: new Date(start + DELIVERIES_KEPT + 29).toISOString() });
    expect(listed.at(-1)!.run).to.equal('r30');
    const stored = await db.models.WebhookDeliveries.collection.findOne({ _id: taskId });
    expect(stored!.deliveries.length, 'the document stays bounded').to.be.at.most(DELIVERIES_KEPT + 20);
  });

  it('answers 400 naming the field for a webhook that is not an http(s) URL or a secret of the wrong form', async () => {
    const { api } = await user();
    const cases: Array<[unknown, RegExp]> = [
      [{ url: 'ftp://example.com/hook' }, /^webhook\.url: expected an http or https URL/],
      [{ url: 'not a url' }, /^webhook\.url: /],
      [{}, /^webhook\.url: /],
      [{ url: receiver.url, secret: 'plain-secret' }, /^webhook\.secret: expected "whsec_"/],
      [{ url: receiver.url, secret: `whsec_${crypto.randomBytes(8).toString('base64')}` }, /^webhook\.secret: /],
      ['https://example.com/hook', /^webhook: /],
    ];
    for (const [webhook, message] of cases) {
      const res = await api.put('/api/tasks/~/default/bad-hook', task(webhook));
      expect(res.status, JSON.stringify(webhook)).to.equal(400);
      expect(res.body.error.message, JSON.stringify(webhook)).to.match(message);
    }
  });

  it('POSTs run.closed signed per Standard Webhooks, retries after a 500 with the same webhook-id, and lists both attempts newest first', async () => {
    const { api, username } = await user();
    const secret = (await api.put('/api/tasks/~/default/hooked', task({ url: receiver.url }))).body.webhook.secret as string;
    receiver.answers.push(500);
    const url = await trigger(api, 'hooked', 'r1');
    const run = await waitForRun(api, url);
    expect(run.status).to.equal('ready');
    await until('the retry', () => receiver.received.length >= 2);

    const [first, second] = receiver.received as [Receiver['received'][0], Receiver['received'][0]];
    const signer = new Webhook(secret);
    for (const attempt of [first, second]) {
      expect(attempt.headers['content-type']).to.equal('application/json');
      expect(attempt.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]+=*$/);
      const payload = signer.verify(attempt.body, attempt.headers) as any;
      expect(payload).to.deep.equal({ type: 'run.closed', task: `${username}/default/hooked`, run });
    }
    expect(second.headers['webhook-id']).to.equal(first.headers['webhook-id']);
    expect(() => new Webhook(clientSecret()).verify(first.body, first.headers), 'another secret does not verify').to.throw();

    const listed = await deliveries(api, 'hooked', 2);
    expect(listed).to.have.length(2);
    expect(listed[0]).to.deep.include({ run: 'r1', attempt: 2, status: 200 });
    expect(listed[0]).to.not.have.property('error');
    expect(listed[1]).to.deep.include({ run: 'r1', attempt: 1, status: 500, error: 'the receiver answered 500: receiver is down' });
    expect(Date.parse(listed[0].at)).to.be.at.least(Date.parse(listed[1].at));
    // The same list through Variant A's task path.
    const viaA = await api.get('/api/profiles/~/default/tasks/hooked/webhook/deliveries');
    expect(viaA.body.deliveries).to.deep.equal(listed);
    expect((await api.get('/api/tasks/~/default/nobody/webhook/deliveries')).status).to.equal(404);
  });

  it('notes a close it could not announce while Temporal is down, and the reconciler\'s pass then starts its delivery', async () => {
    const { api, username } = await user();
    const { db, logger, config, temporal } = getStack();
    expect((await api.put('/api/tasks/~/default/unannounced', task({ url: receiver.url }))).status).to.equal(201);
    const taskDoc = (await findTask(db.models, { owner: username, profile: 'default', name: 'unannounced' }))!;
    // A run closed from outside its workflow (as a read or the reconciler closes one), holding a live-run place.
    const identity = { owner: username, profile: 'default', task: 'unannounced', run: 'u1' };
    const runId = runWorkflowId(identity);
    const claim = await claimLiveRun(db.models, { runId, owner: username, limit: 10, staleMs: 3_600_000 });
    if (claim === 'refused') throw new Error('no live-run place');
    await insertRun(db.models, { identity, taskId: taskDoc._id, taskVersion: taskDoc.version, runner: 'openai', payload: {}, at: new Date(), liveSlot: claim.slot });
    expect((await recordOutsideEnd(db.models, runId, 'ended from outside')).written).to.equal(true);

    // Temporal does not answer: nothing listens at its address.
    const down = new Client({ connection: Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [deadlineInterceptor(500)] }) });
    const deps = { models: db.models, logger, config: { ...config, TEMPORAL_TASK_QUEUE: queue } };
    const notes = db.conn.db!.collection<{ _id: string }>('deferred_announcements');
    try {
      expect(await announceRunClosed({ ...deps, temporal: down }, runId), 'noted for the reconciler').to.equal(true);
    } finally {
      await down.connection.close();
    }
    expect(await notes.findOne({ _id: runId }), 'the note').to.not.equal(null);
    expect(await db.models.LiveRun.collection.findOne({ run: runId }), 'its place, given back before the delivery failed').to.equal(null);
    expect(receiver.received).to.have.length(0);

    // The reconciler's pass (its schedule on this queue may have run it first: the same function).
    await retryDeferredAnnouncements({ ...deps, temporal }, 100);
    expect(await notes.findOne({ _id: runId }), 'the note, once announced').to.equal(null);
    await until('the delivery', () => receiver.received.length >= 1);
    const run = await waitForRun(api, `http://x/api/runs/~/default/unannounced/u1`);
    expect(JSON.parse(receiver.received[0]!.body)).to.deep.equal({ type: 'run.closed', task: `${username}/default/unannounced`, run });
  });

  it('signs with the new secret once a save rotates it, and never shows a secret the client gave', async () => {
    const { api } = await user();
    const old = (await api.put('/api/tasks/~/default/rotating', task({ url: receiver.url }))).body.webhook.secret as string;
    const next = clientSecret();
    const rotated = await api.put('/api/tasks/~/default/rotating', task({ url: receiver.url, secret: next }));
    expect(rotated.status, rotated.text).to.equal(200);
    expect(rotated.body.webhook).to.deep.equal({ url: receiver.url, secret_set: true });
    await waitForRun(api, await trigger(api, 'rotating', 'after'));
    const [sent] = await until('the delivery', () => receiver.received.length > 0 && receiver.received);
    expect((new Webhook(next).verify(sent!.body, sent!.headers) as any).run.name).to.equal('after');
    expect(() => new Webhook(old).verify(sent!.body, sent!.headers)).to.throw(/No matching signature/);
  });

  it('reports a destination the network guard refuses in deliveries, once (it is not retried), for a run that ended in error', async () => {
    const { api, username } = await user();
    const { fake, temporal, db, config } = getStack();
    // A private address: refused by the guard's check of the URL, before any connection is tried.
    await api.put('/api/tasks/~/default/private', task({ url: 'http://10.1.2.3/hook' }));
    fake.script([providerError('openai', 400, 'bad request')]);
    const run = await waitForRun(api, await trigger(api, 'private', 'p1'));
    expect(run.status).to.equal('error');
    const [attempt] = await deliveries(api, 'private', 1);
    expect(attempt).to.deep.include({ run: 'p1', attempt: 1, status: 'refused' });
    expect(attempt.error).to.equal('the destination is refused: 10.1.2.3 is a private address; to allow it, add the host or its network to WEBHOOK_ALLOWLIST (docs/webhooks.md)');

    const record = (await findRun(db.models, runWorkflowId({ owner: username, profile: 'default', task: 'private', run: 'p1' })))!;
    const handle = temporal.workflow.getHandle(webhookDeliveryWorkflowId(record._id, record.created_at.getTime()));
    expect(await handle.result()).to.deep.equal({ delivered: false, reason: attempt.error });
    expect((await api.get('/api/tasks/~/default/private/webhook/deliveries')).body.deliveries).to.have.length(1);

    // WEBHOOK_ALLOWLIST opens loopback to webhooks only: the servlets' policy of the same configuration still refuses it.
    const settings = getStack().configWith(overrides);
    expect(checkUrl(new URL(receiver.url), webhookPolicy(settings)).allowed).to.equal(true);
    expect(checkUrl(new URL(receiver.url), parseNetworkPolicy({ blocklist: settings.NETWORK_BLOCKLIST, allowlist: settings.NETWORK_ALLOWLIST })).allowed).to.equal(false);
    expect(checkUrl(new URL(receiver.url), webhookPolicy(config)).allowed, 'without WEBHOOK_ALLOWLIST').to.equal(false);
  });

  it('delivers the end of a run an operator terminated, and keeps the secret out of history and logs', async () => {
    const { api, username } = await user();
    const { fake, temporal, logs, db } = getStack();
    const secret = (await api.put('/api/tasks/~/default/stopped', task({ url: receiver.url }))).body.webhook.secret as string;
    fake.script(() => ({ hang: true }));
    const url = await trigger(api, 'stopped', 's1');
    const id = runWorkflowId({ owner: username, profile: 'default', task: 'stopped', run: 's1' });
    await until('the run to call the provider', () => fake.requests.length > 0);
    await temporal.workflow.getHandle(id).terminate('stopped by the operator');
    const run = await waitForRun(api, url);
    expect(run.results.at(-1).error).to.equal('terminated: stopped by the operator');

    const [sent] = await until('the delivery', () => receiver.received.length > 0 && receiver.received);
    const payload = new Webhook(secret).verify(sent!.body, sent!.headers) as any;
    expect(payload.run).to.deep.equal(run);
    const [attempt] = await deliveries(api, 'stopped', 1);
    expect(attempt).to.deep.include({ run: 's1', attempt: 1, status: 200 });

    // The read announced the run's end; a reconciler pass finds its terminated workflow and announces it again.
    await until('visibility to list the terminated workflow', async () => {
      for await (const listed of temporal.workflow.list({ query: `WorkflowId = '${id}' AND ExecutionStatus = 'Terminated'` })) return listed;
      return undefined;
    });
    const passAt = async () => (await db.models.ServiceState.findById(`reconcile/${queue}`).lean())?.at.getTime() ?? 0;
    const before = await passAt();
    await temporal.schedule.getHandle(reconcileScheduleId(queue)).trigger();
    await until('a reconciler pass', async () => (await passAt()) > before, 45_000);
    // A run after it, delivered on the same worker: any second delivery of s1 would have been started before it.
    fake.reset();
    await waitForRun(api, await trigger(api, 'stopped', 's2'));
    await until('the later run\'s delivery', () => receiver.received.some((r) => JSON.parse(r.body).run.name === 's2'));
    expect(receiver.received.filter((r) => JSON.parse(r.body).run.name === 's1'), 'POSTs of the terminated run').to.have.length(1);
    const listed = (await api.get('/api/tasks/~/default/stopped/webhook/deliveries')).body.deliveries as any[];
    expect(listed.filter((d) => d.run === 's1'), 'attempts of the terminated run').to.have.length(1);

    const record = (await findRun(db.models, id))!;
    const history = await historyText(temporal, webhookDeliveryWorkflowId(id, record.created_at.getTime()));
    expect(history).to.contain(id);
    const b64 = secret.slice('whsec_'.length);
    expect(history).to.not.contain(b64);
    expect(logs.text()).to.contain('webhook delivered');
    expect(logs.text()).to.not.contain(b64);
  });

  it('does not follow a redirect: a 3xx is a failed attempt, retried at the same URL', async () => {
    const { api } = await user();
    await api.put('/api/tasks/~/default/moved', task({ url: receiver.url }));
    receiver.answers.push(302);
    const run = await waitForRun(api, await trigger(api, 'moved', 'm1'));
    const listed = await deliveries(api, 'moved', 2);
    expect(listed[1]).to.deep.include({ run: 'm1', attempt: 1, status: 302, error: 'the receiver answered 302: receiver is down' });
    expect(listed[0]).to.deep.include({ run: 'm1', attempt: 2, status: 200 });
    expect(receiver.received.map((r) => r.url), 'every attempt at the webhook\'s URL, none at the Location').to.deep.equal(['/hook', '/hook']);
    expect(JSON.parse(receiver.received[1]!.body).run).to.deep.equal(run);
  });

  it('fails an attempt the receiver does not answer within the attempt\'s time limit as `failed`, saying so', async () => {
    const { api, username } = await user();
    const stack = getStack();
    const silent = await startReceiver({ silent: true });
    // The run closes before its task has a webhook (no delivery starts); its delivery is then started on a worker of
    // this test whose attempts have 0.3 s (not 15 s).
    await api.put('/api/tasks/~/default/silent', task());
    await waitForRun(api, await trigger(api, 'silent', 'q1'));
    await api.put('/api/tasks/~/default/silent', task({ url: silent.url }));
    const settings = stack.configWith({ ...overrides, TEMPORAL_TASK_QUEUE: `webhooks-slow-${crypto.randomBytes(4).toString('hex')}` });
    const connection = await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
    const slowWorker = await Worker.create({
      connection,
      namespace: settings.TEMPORAL_NAMESPACE,
      taskQueue: settings.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workflowBundle(),
      activities: createWebhookDeliveryActivities({ config: settings, logger: stack.logger, db: stack.db, keyring: stack.keyring }, { attemptTimeoutMs: 300 }),
    });
    const running = slowWorker.run();
    const record = (await findRun(stack.db.models, runWorkflowId({ owner: username, profile: 'default', task: 'silent', run: 'q1' })))!;
    const delivery = stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(record._id, record.created_at.getTime()));
    try {
      await startWebhookDelivery({ temporal: stack.temporal, config: settings }, { runId: record._id, createdAt: record.created_at.getTime() });
      const listed = await deliveries(api, 'silent', 2);
      expect(listed.at(-1)).to.deep.include({ run: 'q1', attempt: 1, status: 'failed', error: 'no answer within 0.3 s' });
      expect(listed.at(-2), 'retried').to.deep.include({ run: 'q1', attempt: 2, status: 'failed' });
      expect(silent.received.length, 'the receiver got the POST').to.be.at.least(1);
    } finally {
      await delivery.terminate('test over').catch(() => undefined);
      slowWorker.shutdown();
      await running;
      await connection.close();
      await silent.close();
    }
  });
});
