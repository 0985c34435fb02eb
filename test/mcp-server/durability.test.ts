import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { expect } from 'chai';
import { CallToolResultSchema, CreateTaskResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { createTask, until } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { startWorkerProcess } from '../helpers/worker-process';
import { mcpClient } from '../helpers/mcp-client';

describe('MCP server: a task survives its worker', () => {
  const children: ChildProcess[] = [];
  beforeEach(() => getStack().fake.reset());
  afterEach(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    getStack().fake.reset();
  });

  it('keeps a task working while its worker is killed, and completes it on the next worker', async function () {
    this.timeout(120_000);
    const { sessionId } = await signedIn('mcp-durable');
    const { fake, env } = getStack();
    const queue = `mcp-durable-${crypto.randomBytes(4).toString('hex')}`;
    const workerEnv = { ...env, TEMPORAL_TASK_QUEUE: queue, LOG_LEVEL: 'info' };
    const api = await startApi({ TEMPORAL_TASK_QUEUE: queue, PROVIDER_HEARTBEAT_TIMEOUT_MS: '2000' });
    try {
      await createTask(apiFor(sessionId, api.url), 'default', 'durable');
      let calls = 0;
      fake.script((req) => (++calls === 1 ? { hang: true } : openaiText(`survived: ${lastUserText(req)}`)));
      const first = await startWorkerProcess(workerEnv);
      children.push(first);
      const client = await mcpClient(sessionId, { base: api.url });
      const { task } = await client.request({ method: 'tools/call', params: { name: 'durable', arguments: { text: 'x' }, task: {} } }, CreateTaskResultSchema);
      await until('the provider call on the first worker', () => calls > 0, 60_000);
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      expect((await client.experimental.tasks.getTask(task.taskId)).status).to.equal('working');
      children.push(await startWorkerProcess(workerEnv));
      const result = (await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, { timeout: 90_000 })) as CallToolResult;
      expect(result.content).to.deep.equal([{ type: 'text', text: 'survived: Say x' }]);
      expect((await client.experimental.tasks.getTask(task.taskId)).status).to.equal('completed');
    } finally {
      await api.close();
    }
  });
});
