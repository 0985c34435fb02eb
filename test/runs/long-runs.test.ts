import mongoose from 'mongoose';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { lastUserText, openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { createTask, historyText, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { runWorkflowId } from '../../src/store/runs';

const MiB = 1024 * 1024;
const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');

/** The largest document a run has in the store (its record, its pages, its stored texts), in BSON bytes. */
async function largestDocument(runId: string): Promise<number> {
  const { models } = getStack().db;
  const docs = [
    await models.Run.collection.findOne({ _id: runId as never }),
    ...(await models.RunPage.collection.find({ run: runId }).toArray()),
    ...(await models.RunBlob.collection.find({ run: runId }).toArray()),
  ];
  return Math.max(...docs.map((d) => mongoose.mongo.BSON.calculateObjectSize(d!)));
}

describe('runs: large and long', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('runs a prompt that expands to 1.2 MB to ready, its full text in the results and the answer, and none of it in history', async function () {
    this.timeout(120_000);
    const { api, username } = await signedIn();
    const { temporal } = getStack();
    await createTask(api, 'default', 'big', { prompt: '{{ instr }} {{ pad }} {{ pad }}' });
    const pad = `${'p'.repeat(300_000)}-middle-${'q'.repeat(300_000)}`;
    const trigger = await postSigned(await signedUrl(api, 'default', 'big'), { instr: 'Count the letters:', pad }, { 'run-id': 'b1' });
    expect(trigger.status, trigger.text).to.equal(201);
    const run = await waitForRun(api, trigger.body.url, 90_000);
    const prompt = `Count the letters: ${pad} ${pad}`;
    expect(prompt.length).to.be.greaterThan(1_200_000);
    expect(run.status, JSON.stringify(run.results.at(-1)).slice(0, 500)).to.equal('ready');
    expect(run.results.find((e: any) => e.msg === 'prompt').exchange.content === prompt, 'the prompt entry').to.equal(true);
    expect(run.results.at(-1).lastMessage.content === `echo: ${prompt}`, 'the answer').to.equal(true);
    expect(lastUserText(getStack().fake.requests[0]!) === prompt, 'what the provider got').to.equal(true);

    const id = runWorkflowId({ owner: username, profile: 'default', task: 'big', run: 'b1' });
    const description = await temporal.workflow.getHandle(id).describe();
    expect(description.historySize, 'history bytes').to.be.lessThan(64 * 1024);
    expect(await historyText(temporal, id)).not.to.contain('p'.repeat(1000));
    expect(await largestDocument(id)).to.be.lessThan(2 * MiB);
    const list = await api.get('/api/runs/~/default/big');
    expect(list.body[0].results.at(-1).lastMessage.content === `echo: ${prompt}`, 'the run in its list').to.equal(true);
  });

  it('runs 60 turns whose tool answers 200 KiB each to ready, with every result, a history under 2 MB and turns of equal cost', async function () {
    this.timeout(300_000);
    const { sessionId, username } = await signedIn();
    const { fake, temporal } = getStack();
    const server = await startApi({ RUN_MAX_TURNS: '70' });
    try {
      const api = apiFor(sessionId, server.url);
      await installServlet(api, username, 'bulk', 'big', { kib: '200' });
      await createTask(api, 'default', 'sixty');
      let calls = 0;
      fake.script((req) => (++calls <= 60 ? openaiToolCall([{ id: `call_${calls}`, name: 'big__bulk', arguments: { n: calls } }]) : openaiText(`read ${toolMessages(req).length} results`)));
      const trigger = await postSigned(await signedUrl(api, 'default', 'sixty'), { text: 'x' }, { 'run-id': 's1' });
      const run = await waitForRun(api, trigger.body.url, 240_000);
      expect(run.status, JSON.stringify(run.results.at(-1))).to.equal('ready');
      expect(run.results.at(-1).lastMessage.content).to.equal('read 60 results');
      const results = run.results.filter((e: any) => e.msg === 'tool result: big__bulk');
      expect(results).to.have.length(60);
      expect(results.every((e: any) => e.exchange.content === 'b'.repeat(200 * 1024))).to.equal(true);
      expect(toolMessages(fake.requests.at(-1)!).every((m: any) => m.content.length === 200 * 1024)).to.equal(true);

      const id = runWorkflowId({ owner: username, profile: 'default', task: 'sixty', run: 's1' });
      const handle = temporal.workflow.getHandle(id);
      expect((await handle.describe()).historySize, 'history bytes').to.be.lessThan(2 * MiB);
      // Bytes of history per turn: from one model call's scheduling to the next.
      const { events } = await handle.fetchHistory();
      const modelCalls = ['firstModelCall', 'callModel'];
      const turnStarts = events!.flatMap((e, i) => (modelCalls.includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? '') ? [i] : []));
      expect(turnStarts.length).to.be.at.least(61);
      const turnBytes = turnStarts.slice(0, -1).map((start, k) => events!.slice(start, turnStarts[k + 1]).reduce((n, e) => n + JSON.stringify(e).length, 0));
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const early = mean(turnBytes.slice(1, 11));
      const late = mean(turnBytes.slice(-10));
      expect(late / early, `history bytes per turn, turns 2-11: ${early}, last 10: ${late}`).to.be.lessThan(1.2);
      expect(await largestDocument(id), 'no document grows with the run').to.be.lessThan(4 * MiB);
    } finally {
      await server.close();
    }
  });

  it('continues a long run as new, answering live reads across it, and ends ready with every entry', async function () {
    this.timeout(120_000);
    const { sessionId, username } = await signedIn();
    const { fake, temporal } = getStack();
    const server = await startApi({ RUN_CONTINUE_AS_NEW_EVENTS: '25', RUN_MAX_TURNS: '30' });
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'chain');
      let calls = 0;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      fake.script(async () => {
        calls++;
        if (calls === 10) await gate; // a live read meanwhile, after the run continued as new
        return calls <= 12 ? openaiToolCall([{ id: `c${calls}`, name: 'nowhere__tool', arguments: { n: calls } }]) : openaiText('done');
      });
      const trigger = await postSigned(await signedUrl(api, 'default', 'chain'), { text: 'x' }, { 'run-id': 'c1' });
      const path = new URL(trigger.body.url).pathname;
      while (calls < 10) await new Promise((r) => setTimeout(r, 50));
      const live = await api.get(path);
      expect(live.headers.get('run-source')).to.equal('live');
      expect(live.body.status).to.equal('running');
      expect(live.body.results.filter((e: any) => e.msg === 'tool result: nowhere__tool (error)')).to.have.length(9);
      release();
      const run = await waitForRun(api, trigger.body.url, 60_000);
      expect(run.status).to.equal('ready');
      const msgs = run.results.map((e: any) => e.msg);
      expect(msgs[0]).to.equal('run started');
      expect(msgs.filter((m: string) => m === 'tool call: nowhere__tool')).to.have.length(12);
      expect(msgs.filter((m: string) => m === 'tool result: nowhere__tool (error)')).to.have.length(12);
      expect(msgs.at(-1)).to.equal('final answer');
      // Every model call was given the whole conversation, though each execution held only its part.
      expect(fake.requests.at(-1)!.body.messages).to.have.length(1 + 12 * 2);

      const id = runWorkflowId({ owner: username, profile: 'default', task: 'chain', run: 'c1' });
      let continued = 0;
      for (let i = 0; i < 50 && continued === 0; i++) {
        for await (const w of temporal.workflow.list({ query: `WorkflowId = "${id}"` })) if (w.status.name === 'CONTINUED_AS_NEW') continued++;
        if (!continued) await new Promise((r) => setTimeout(r, 200));
      }
      expect(continued, 'executions that continued as new').to.be.at.least(1);
    } finally {
      await server.close();
    }
  });
});
