import { expect } from 'chai';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { signedIn } from '../helpers/api';
import { openaiText } from '../helpers/fake-provider';
import { createTask, until } from '../helpers/runs';
import { getStack } from '../helpers/stack';
import { mcpClient } from '../helpers/mcp-client';
import { createRetentionActivities } from '../../activities/retention';
import { createRuns } from '../../src/runs';
import { runWorkflowId } from '../../src/store/runs';

const DAY_MS = 24 * 3600_000;
const RUN_META = 'io.github.prompt-task-runner/run';

/** A closed run `run` of `task`, started as an MCP task and read to its end; its task id. */
async function endedTask(client: Client, task: string, run: string): Promise<string> {
  const { task: created } = await client.request({ method: 'tools/call', params: { name: task, arguments: { text: 'x' }, task: {}, _meta: { [RUN_META]: run } } }, CreateTaskResultSchema);
  await client.experimental.tasks.getTaskResult(created.taskId, CallToolResultSchema);
  return created.taskId;
}

/** The JSON-RPC error `tasks/get` of `taskId` answers (it must answer one). */
async function getError(client: Client, taskId: string): Promise<{ code: number; message: string }> {
  try {
    await client.experimental.tasks.getTask(taskId);
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error('expected a JSON-RPC error');
}

const handles = (taskId: string) => getStack().db.conn.db!.collection<{ _id: string }>('mcp_tasks').countDocuments({ _id: taskId });

describe('MCP server: a deleted run\'s task', () => {
  beforeEach(() => getStack().fake.script(() => openaiText('done')));
  after(() => getStack().fake.reset());

  it('answers tasks/get of a deleted run\'s task as for an unknown id, and keeps no handle of it', async () => {
    const me = await signedIn('mcp-del');
    await createTask(me.api, 'default', 'greet');
    const client = await mcpClient(me.sessionId);
    const taskId = await endedTask(client, 'greet', 'gone');
    expect(await handles(taskId)).to.equal(1);
    const unknown = await getError(client, 'A'.repeat(43));
    const deleted = await me.api.delete('/api/runs/~/default/greet/gone');
    expect(deleted.status, deleted.text).to.equal(204);
    const answer = await getError(client, taskId);
    expect(answer).to.deep.include({ code: unknown.code, message: unknown.message });
    expect(await handles(taskId)).to.equal(0);
    expect((await client.experimental.tasks.listTasks()).tasks).to.deep.equal([]);
  });

  it('forgets the tasks of a deleted task\'s runs', async () => {
    const me = await signedIn('mcp-del-task');
    await createTask(me.api, 'default', 'brief');
    const client = await mcpClient(me.sessionId);
    const taskIds = [await endedTask(client, 'brief', 'one'), await endedTask(client, 'brief', 'two')];
    const deleted = await me.api.delete('/api/tasks/~/default/brief');
    expect(deleted.status, deleted.text).to.be.oneOf([200, 204]);
    for (const taskId of taskIds) {
      expect((await getError(client, taskId)).message).to.match(/unknown task id/);
      expect(await handles(taskId)).to.equal(0);
    }
  });

  it('forgets the task of a run that retention deleted', async () => {
    const me = await signedIn('mcp-del-old');
    await createTask(me.api, 'default', 'old');
    const client = await mcpClient(me.sessionId);
    const taskId = await endedTask(client, 'old', 'aged');
    const { db, temporal, logger, config } = getStack();
    const runId = runWorkflowId({ owner: me.username, profile: 'default', task: 'old', run: 'aged' });
    await db.models.Run.updateOne({ _id: runId }, { $set: { modified_at: new Date(Date.now() - 400 * DAY_MS) } });
    const retention = createRetentionActivities({ db, logger }, createRuns({ models: db.models, temporal, logger, config }));
    expect((await retention.deleteExpiredRuns({ before: Date.now() - 365 * DAY_MS, limit: 100 })).deleted).to.be.at.least(1);
    expect(await handles(taskId)).to.equal(0);
    // The API process may serve its copy of the record a moment longer (RUN_RECORD_CACHE_MS).
    const answer = await until('the task to be unknown', async () => {
      const error = await getError(client, taskId).catch(() => undefined);
      return error?.message.includes('unknown task id') && error;
    });
    expect(answer.code).to.equal(-32602);
  });
});
