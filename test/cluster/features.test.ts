import crypto from 'node:crypto';
import { expect } from 'chai';
import pLimit from 'p-limit';
import { runWorkflowId } from '../../src/store/runs';
import { api, type Api } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { clusterStack } from './harness';
import { signedInOnBoth } from './clients';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** Every payload of a history, as the Web UI sends them to the codec endpoint (protobuf JSON, base64). */
function historyPayloads(value: unknown, found: Array<{ metadata: Record<string, string>; data?: string }> = []) {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return found;
  const v = value as { metadata?: Record<string, Uint8Array>; data?: Uint8Array };
  if (v.metadata && typeof v.metadata === 'object' && Object.values(v.metadata).every((m) => m instanceof Uint8Array)) {
    found.push({
      metadata: Object.fromEntries(Object.entries(v.metadata).map(([k, m]) => [k, Buffer.from(m).toString('base64')])),
      ...(v.data && v.data.length > 0 ? { data: Buffer.from(v.data).toString('base64') } : {}),
    });
    return found;
  }
  for (const item of Array.isArray(value) ? value : Object.values(value)) historyPayloads(item, found);
  return found;
}

/**
 * What the dev server's suite shows of continue-as-new, the Web UI's codec endpoint and task-queue fairness, shown
 * again on the real temporal-server with SQL visibility on PostgreSQL (search attributes: cluster.test.ts). Each on an
 * API and worker of its own with the settings it needs.
 */
describe('continue-as-new, the codec endpoint and fairness on the cluster topology', function () {
  this.timeout(240_000);
  const codecToken = crypto.randomBytes(16).toString('hex');
  let pair: { url: string; stop(): Promise<void> };
  let me: Api;
  let user: string;

  before(async function () {
    this.timeout(180_000);
    // Four provider calls at once on the pair's worker, all of them open to one owner: a flood of one owner's runs
    // waits in Temporal's task queue, where fairness orders it, not in the worker's per-owner cap.
    pair = await clusterStack().startPair('features', {
      RUN_CONTINUE_AS_NEW_EVENTS: '25',
      RUN_MAX_TURNS: '30',
      CODEC_TOKEN: codecToken,
      WORKER_MAX_PROVIDER_CALLS: '4',
      WORKER_MAX_PROVIDER_CALLS_PER_OWNER: '4',
    });
    const signed = await signedInOnBoth();
    user = signed.user;
    me = api(signed.sessionId, pair.url);
  });
  after(async () => {
    clusterStack().fake.reset();
    await pair?.stop();
  });

  it('continues a long run as new, and ends it ready with every entry', async () => {
    const { fake, client } = clusterStack();
    await createTask(me, 'default', 'chain');
    let calls = 0;
    fake.script(() => (++calls <= 12 ? openaiToolCall([{ id: `c${calls}`, name: 'nowhere__tool', arguments: { n: calls } }]) : openaiText('done')));
    const trigger = await postSigned(await signedUrl(me, 'default', 'chain'), { text: 'x' }, { 'run-id': 'c1' });
    expect(trigger.status, trigger.text).to.equal(201);
    const run = await waitForRun(me, trigger.body.url, 90_000);
    expect(run.status).to.equal('ready');
    const msgs = run.results.map((e: { msg: string }) => e.msg);
    expect(msgs.filter((m: string) => m === 'tool call: nowhere__tool')).to.have.length(12);
    expect(msgs.at(-1)).to.equal('final answer');
    const id = runWorkflowId({ owner: user, profile: 'default', task: 'chain', run: 'c1' });
    const statuses = await until('SQL visibility to show the run continued as new and completed', async () => {
      const found: string[] = [];
      for await (const w of client.workflow.list({ query: `WorkflowId = "${id}"` })) found.push(w.status.name);
      return found.includes('CONTINUED_AS_NEW') && found.includes('COMPLETED') ? found : undefined;
    }, 60_000);
    expect(statuses.filter((s) => s === 'COMPLETED')).to.have.length(1);
  });

  it('decodes a real run\'s history for the Web UI, with the codec token only', async () => {
    const { fake, client } = clusterStack();
    fake.script(() => openaiText('ok'));
    await createTask(me, 'default', 'big', { prompt: 'Repeat: {{ text }}' });
    const marker = crypto.randomBytes(8).toString('hex');
    // ~84 KB: over RUN_INLINE_BYTES (64 KiB), so history holds a reference and the store the text.
    const trigger = await postSigned(await signedUrl(me, 'default', 'big'), { text: `${marker} ${'lorem ipsum '.repeat(7000)}` }, { 'run-id': 'b1' });
    expect(trigger.status, trigger.text).to.equal(201);
    expect((await waitForRun(me, trigger.body.url, 60_000)).status).to.equal('ready');
    const history = await client.workflow.getHandle(runWorkflowId({ owner: user, profile: 'default', task: 'big', run: 'b1' })).fetchHistory();
    const payloads = historyPayloads(history);
    const text = (ps: Array<{ data?: string }>) => ps.map((p) => (p.data ? Buffer.from(p.data, 'base64').toString('utf8') : '')).join('\n');
    expect(text(payloads), 'history holds references, not the prompt').not.to.include(marker);

    const decode = (headers: Record<string, string>) =>
      fetch(`${pair.url}/codec/decode`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers }, body: JSON.stringify({ payloads }) });
    expect((await decode({})).status).to.equal(401);
    const res = await decode({ authorization: `Bearer ${codecToken}` });
    expect(res.status).to.equal(200);
    const decoded = (await res.json()) as { payloads: Array<{ data?: string }> };
    expect(decoded.payloads).to.have.length(payloads.length);
    expect(text(decoded.payloads)).to.include(marker);
    expect(payloads[0]!.metadata.encoding).to.equal(b64('json/plain'));
  });

  it("starts another owner's run ahead of one owner's backlog (fairness by owner in the server's matcher)", async () => {
    const { fake } = clusterStack();
    // The order in which the model is called, by owner (the prompt names it).
    const order: string[] = [];
    fake.script(async (req) => {
      const who = lastUserText(req).includes('from B') ? 'B' : 'A';
      order.push(who);
      await new Promise((r) => setTimeout(r, who === 'A' ? 250 : 0));
      return openaiText(`ok ${who}`);
    });
    const other = await signedInOnBoth();
    const them = api(other.sessionId, pair.url);
    await createTask(me, 'default', 'flood', { prompt: 'from {{ text }}' });
    await createTask(them, 'default', 'one', { prompt: 'from {{ text }}' });
    const floodUrl = await signedUrl(me, 'default', 'flood');
    const oneUrl = await signedUrl(them, 'default', 'one');

    // A triggers 200 runs; at 150 (its calls take 250 ms, four at a time: a backlog of about a hundred), B one.
    const limit = pLimit(16);
    let triggered = 0;
    let atB: { triggered: number; called: number; backlog: number } | undefined;
    let bDone: Promise<unknown> | undefined;
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        limit(async () => {
          const res = await postSigned(floodUrl, { text: 'A' }, { 'run-id': `a${i}` });
          expect(res.status, res.text).to.equal(201);
          if (++triggered === 150) {
            const called = order.filter((w) => w === 'A').length;
            atB = { triggered, called, backlog: triggered - called };
            const b = await postSigned(oneUrl, { text: 'B' }, { 'run-id': 'b1' });
            expect(b.status, b.text).to.equal(201);
            bDone = waitForRun(them, b.body.url, 120_000);
          }
        }),
      ),
    );
    expect((await bDone) as { status: string }).to.have.property('status', 'ready');
    const aBeforeB = order.slice(0, order.indexOf('B')).length;
    const passedB = aBeforeB - atB!.called;
    console.log(`    (A's backlog when B triggered: ${atB!.backlog} runs; A's model calls that started before B's: ${passedB})`);
    expect(atB!.backlog, 'a backlog of A formed before B triggered (else this shows nothing)').to.be.at.least(40);
    // In arrival order B's call would come after A's whole backlog; fair by owner, it comes after a few.
    expect(passedB).to.be.below(atB!.backlog / 3);
    await until('A\'s runs to close', async () => order.length >= 201, 180_000);
  });
});
