import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Types } from 'mongoose';
import { insertRun } from '../../src/store/runs';
import { getStack } from '../helpers/stack';
import { anthropicToolUse, openaiToolCall } from '../helpers/fake-provider';

describe('the real stack', () => {
  it('runs a workflow through the Temporal server and a worker', async () => {
    const { temporal, config } = getStack();
    const result = await temporal.workflow.execute('ping', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `ping-${Date.now()}`,
      args: [{ text: 'round trip' }],
    });
    expect(result).to.equal('round trip');
  });

  it('stores and reads a mongoose document through the database', async () => {
    const { db } = getStack();
    const now = new Date();
    await db.models.Profile.create({ owner: 'stack-test', name: 'p1', description: 'd', created_at: now, modified_at: now });
    const found = await db.models.Profile.findOne({ owner: 'stack-test', name: 'p1' }).lean();
    expect(found?.description).to.equal('d');
    expect(found?.created_at.getTime()).to.equal(now.getTime());
    const dup = await db.models.Profile.create({ owner: 'stack-test', name: 'p1', created_at: now, modified_at: now }).then(
      () => null,
      (err: { code?: number }) => err.code,
    );
    expect(dup, 'unique index enforced').to.equal(11000);
  });

  // A run's writes filter on `_id` and its state (store/runs.ts): found by the index as well.
  for (const [what, filter] of [
    ['by _id', { _id: 'run/o/p/t/r' }],
    ['by _id and other conditions', { _id: 'run/o/p/t/r', status: { $nin: ['ready', 'error'] }, created_at: new Date(0) }],
  ] as const) {
    it(`finds documents ${what} through the index, not by scanning the collection`, async () => {
      const { db } = getStack();
      const runs = db.models.Run.collection.collectionName;
      const plan = await db.conn.db!.command({ explain: { find: runs, filter } });
      const text = JSON.stringify(plan.queryPlanner ?? {});
      if (plan.ferretdbVersion === undefined && plan.serverInfo?.ferretdbVersion === undefined) {
        // MongoDB (MONGO_URL): the _id lookup is the IDHACK / an index scan.
        expect(text).to.match(/IDHACK|IXSCAN|EXPRESS_IXSCAN/);
        return;
      }
      // FerretDB on SQLite prints SQLite's plan: our build (scripts/install-tools.sh) queries by the _id index's own
      // expression, whatever else the filter says, so this reads "SEARCH ... USING INDEX ..._id_" where the unfixed
      // release reads "SCAN".
      expect(text).to.match(/SEARCH \S+ USING INDEX \S+__id_/);
      expect(text).not.to.match(/\bSCAN\b/);
    });
  }

  // A task's run list (store/runs.ts listRuns): equalities on the task, newest first, a page plus one; after a cursor,
  // a range on created_at. Our build searches the run list's index for them and reads only the page's documents.
  for (const [what, extra] of [
    ['the first page', () => ({})],
    ['a page after a cursor', () => ({ created_at: { $lt: new Date() } })],
  ] as const) {
    it(`reads ${what} of a task's run list through its index, not by scanning the collection`, async () => {
      const { db } = getStack();
      const task = { owner: 'stack-list', profile: 'p', task: `t${Date.now()}` };
      for (let i = 0; i < 3; i++) {
        const at = new Date(Date.now() - 1000 + i);
        await insertRun(db.models, { identity: { ...task, run: `r${i}` }, taskId: new Types.ObjectId(), taskVersion: 1, runner: 'r', payload: {}, at });
      }
      const runs = db.models.Run.collection.collectionName;
      const find = { find: runs, filter: { ...task, ...extra() }, sort: { created_at: -1 as const, _id: -1 as const }, limit: 2 };
      const plan = await db.conn.db!.command({ explain: find });
      const text = JSON.stringify(plan.queryPlanner ?? {});
      if (plan.ferretdbVersion === undefined && plan.serverInfo?.ferretdbVersion === undefined) {
        expect(text).to.match(/IXSCAN/);
        return;
      }
      // SQLite's plan: the index's three equalities and the range that keeps the first two runs (and their ties),
      // where a build without the pushdown (scripts/install-tools.sh) reads "SCAN".
      expect(text).to.match(/SEARCH \S+ USING INDEX \S+_owner_1_profile_1_task_1_created_at_-1 \(<expr>=\? AND <expr>=\? AND <expr>=\? AND <expr>>\?/);
      expect(text).not.to.match(/\bSCAN\b/);
      const names = (await db.models.Run.find(find.filter).sort(find.sort).limit(2).lean()).map((r) => r.name);
      expect(names).to.deep.equal(['r2', 'r1']);
    });
  }

  describe('fake model provider', () => {
    beforeEach(() => getStack().fake.reset());

    it('answers the real openai client, with tool calls, and records the request', async () => {
      const { fake } = getStack();
      const client = new OpenAI({ apiKey: 'sk-test-1', baseURL: fake.openaiBaseUrl });
      fake.script([openaiToolCall([{ name: 'greet', arguments: { who: 'x' } }])]);
      const first = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
      expect(first.choices[0]!.message.tool_calls?.[0]).to.deep.include({ type: 'function' });
      const second = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
      expect(second.choices[0]!.message.content).to.equal('echo: hello');
      expect(fake.requests).to.have.length(2);
      expect(fake.requests[0]!.headers.authorization).to.equal('Bearer sk-test-1');
    });

    it('answers the real anthropic client, with tool use, and records the request', async () => {
      const { fake } = getStack();
      const client = new Anthropic({ apiKey: 'sk-ant-1', baseURL: fake.anthropicBaseUrl });
      fake.script([anthropicToolUse([{ name: 'greet', input: { who: 'x' } }])]);
      const first = await client.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
      expect(first.content[0]).to.deep.include({ type: 'tool_use', name: 'greet' });
      const second = await client.messages.create({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'yo' }] });
      expect(second.content[0]).to.deep.equal({ type: 'text', text: 'echo: yo' });
      const auth = fake.requests[0]!.headers;
      expect(auth['x-api-key'] ?? auth.authorization).to.match(/sk-ant-1/);
    });
  });
});
