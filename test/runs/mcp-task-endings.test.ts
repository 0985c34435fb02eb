import crypto from 'node:crypto';
import { expect } from 'chai';
import { api as apiFor, signedIn, useOwnWorkerAndApi, type Api } from '../helpers/api';
import { openaiText, openaiToolCall, type RecordedRequest } from '../helpers/fake-provider';
import { hostileServer, TOOLS } from '../helpers/mcp-hostile-server';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { getStack } from '../helpers/stack';

const toolMessages = (req: RecordedRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');
const msgs = (run: { results: Array<{ msg: string }> }) => run.results.map((e) => e.msg);

/** The worker and API of these tests: loopback MCP servers are allowed to them (MCP_ALLOWLIST), on a queue of their own. */
const SETTINGS = { MCP_ALLOWLIST: '127.0.0.1', TEMPORAL_TASK_QUEUE: `mcp-task-endings-${crypto.randomBytes(4).toString('hex')}` };

/**
 * Runs whose MCP tool is an MCP task that does not end well: one that stays `working` for ever, one whose server loses
 * it. The hostile server's task tools (test/helpers/mcp-hostile-server.ts) are installed through the API.
 */
describe('runs: MCP tasks that never end or are lost', function () {
  this.timeout(60_000);
  const server = useOwnWorkerAndApi(SETTINGS);

  /** A user of this file's API with the hostile server installed as `h` (no approvals), and a task `task`. */
  async function userWithHostile(task: string, limits?: { timeout_s: number }) {
    const { sessionId } = await signedIn();
    const api = apiFor(sessionId, server.url);
    const installed = await api.post('/api/profiles/~/default/installations', { name: 'h', mcp: { url: (await hostileServer()).url('/mcp') }, settings: { approval: 'none' } });
    expect(installed.status, installed.text).to.equal(201);
    if (limits) {
      const put = await api.put(`/api/tasks/~/default/${task}`, { runner: 'openai', openai: { prompt: 'Say {{ text }}', model: 'test-model' }, settings: { key: 'sk-test-key-0123456789abcdef' }, limits });
      expect(put.status, put.text).to.equal(201);
    } else {
      await createTask(api, 'default', task);
    }
    return api;
  }

  async function trigger(api: Api, task: string): Promise<string> {
    const res = await postSigned(await signedUrl(api, 'default', task), { text: 'x' });
    expect(res.status, res.text).to.equal(201);
    return res.body.url as string;
  }

  it('ends a run whose MCP task stays working at the run\'s time limit, and sends the server tasks/cancel', async () => {
    const hostile = await hostileServer();
    const { fake } = getStack();
    const cancels = hostile.stats.taskCancels[TOOLS.taskNeverEnds] ?? 0;
    const polls = hostile.stats.taskPolls[TOOLS.taskNeverEnds] ?? 0;
    fake.script([openaiToolCall([{ name: `h__${TOOLS.taskNeverEnds}`, arguments: {} }]), openaiText('never asked')]);
    const api = await userWithHostile('forever', { timeout_s: 5 });
    const run = await waitForRun(api, await trigger(api, 'forever'), 40_000);
    expect(run.status, JSON.stringify(run.results)).to.equal('error');
    expect(run.results.at(-1).error).to.equal('the run exceeded its time limit of 5 s');
    expect(hostile.stats.taskPolls[TOOLS.taskNeverEnds] ?? 0, 'the task was followed with tasks/get').to.be.greaterThan(polls);
    await until('the server to cancel the task on tasks/cancel', () => (hostile.stats.taskCancels[TOOLS.taskNeverEnds] ?? 0) > cancels);
    expect(fake.requests, 'the model was not asked again').to.have.length(1);
  });

  it('tells the model the task\'s result is lost when the server forgets the session that holds the task', async () => {
    const hostile = await hostileServer();
    const { fake } = getStack();
    const polls = hostile.stats.taskPolls[TOOLS.taskLost] ?? 0;
    fake.script([openaiToolCall([{ name: `h__${TOOLS.taskLost}`, arguments: {} }]), (req) => openaiText(`final: ${toolMessages(req)[0].content}`)]);
    const api = await userWithHostile('lost');
    const run = await waitForRun(api, await trigger(api, 'lost'), 40_000);
    expect(run.status, JSON.stringify(run.results)).to.equal('ready');
    expect(run.results.at(-1).lastMessage.content).to.match(/^final: ERROR: the task's result is lost: .*no longer knows the session/);
    // The next tasks/get found no session: answered 404 before it reached the task.
    expect((hostile.stats.taskPolls[TOOLS.taskLost] ?? 0) - polls, 'followed once while it was there').to.equal(1);
    expect(msgs(run)).to.include(`tool result: h__${TOOLS.taskLost} (error)`);
  });
});
