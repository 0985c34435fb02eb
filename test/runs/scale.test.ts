import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { installServlet } from '../helpers/servlets';
import { startWorkerProcess } from '../helpers/worker-process';
import { runWorkflowId } from '../../src/store/runs';

const queueName = (prefix: string) => `${prefix}-${crypto.randomBytes(4).toString('hex')}`;

describe('runs: scale', () => {
  const children: ChildProcess[] = [];
  beforeEach(() => getStack().fake.reset());
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
    getStack().fake.reset();
  });

  it('sends provider calls over kept-alive connections, not one connection each', async () => {
    const { api } = await signedIn();
    const { fake } = getStack();
    await createTask(api, 'default', 'pooled');
    const url = await signedUrl(api, 'default', 'pooled');
    for (let i = 0; i < 5; i++) await waitForRun(api, (await postSigned(url, { text: `n${i}` })).body.url);
    const ports = new Set(fake.requests.map((r) => r.remotePort));
    expect(fake.requests).to.have.length(5);
    expect(ports.size, `client ports: ${[...ports].join(', ')}`).to.be.lessThan(5);
  });

  it('runs tool calls within their own limit, one at a time here, while provider calls of other runs go on', async function () {
    this.timeout(90_000);
    const { sessionId, username } = await signedIn();
    const stack = getStack();
    const queue = queueName('tools');
    const worker = await stack.startWorker({ TEMPORAL_TASK_QUEUE: queue, WORKER_MAX_TOOL_CALLS: '1', SERVLET_CALL_TIMEOUT_MS: '2000' });
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      await installServlet(api, username, 'infinite-loop', 'loop');
      await createTask(api, 'default', 'spins');
      await createTask(api, 'default', 'talks', { prompt: 'Just {{ text }}' });
      // Runs of `spins` call a tool that computes until its time limit; `talks` only talks to the model.
      stack.fake.script((req) =>
        JSON.stringify(req.body.messages).includes('Just ')
          ? openaiText('talked')
          : req.body.messages.some((m: any) => m.role === 'tool')
            ? openaiText('spun')
            : openaiToolCall([{ name: 'loop__spin', arguments: {} }]),
      );
      const spin = await signedUrl(api, 'default', 'spins');
      const [a, b] = await Promise.all([postSigned(spin, { text: 'a' }, { 'run-id': 'a' }), postSigned(spin, { text: 'b' }, { 'run-id': 'b' })]);
      // Both tool calls are scheduled; while the first computes, a run that needs no tool completes.
      const talk = await postSigned(await signedUrl(api, 'default', 'talks'), { text: 'hi' }, { 'run-id': 't' });
      const talked = await waitForRun(api, talk.body.url);
      expect(talked.results.at(-1).lastMessage.content).to.equal('talked');
      const runA = await waitForRun(api, a.body.url, 60_000);
      const runB = await waitForRun(api, b.body.url, 60_000);
      expect([runA.status, runB.status]).to.deep.equal(['ready', 'ready']);
      expect(Date.parse(talked.modified_at), 'the run without tools ended before either tool run').to.be.lessThan(Math.min(Date.parse(runA.modified_at), Date.parse(runB.modified_at)));
      // One tool slot: one call started only after the other had ended.
      const spans = await Promise.all(
        ['a', 'b'].map(async (run) => {
          const { events } = await stack.temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task: 'spins', run })).fetchHistory();
          const at = (e: any) => Number(e.eventTime.seconds) * 1000 + Math.floor(e.eventTime.nanos / 1e6);
          const scheduled = events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool')!;
          expect(scheduled.activityTaskScheduledEventAttributes!.taskQueue!.name).to.equal(`${queue}.tools`);
          return { started: at(events!.find((e) => e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled.eventId!.toString())), ended: at(events!.find((e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === scheduled.eventId!.toString())) };
        }),
      );
      const [first, second] = spans.sort((x, y) => x.started - y.started);
      expect(second!.started, JSON.stringify(spans)).to.be.at.least(first!.ended);
    } finally {
      await server.close();
      await worker.stop();
    }
  });

  // Skipped from 06:23 to 21:50 on 2026-11-28: under a full suite's load one of 24 runs had stayed open past 100 s
  // (its worker held a workflow task 88 s in a local activity). The first call's path has changed since (its end
  // recorded by the call through the recorder; the crossing of the workflow's `running` write fixed); it passed 4 of 4
  // alone and beside other work here, and runs in every suite again.
  it('shares a task queue between two worker processes, and every run ends once', async function () {
    this.timeout(120_000);
    const { sessionId, username } = await signedIn();
    const { fake, env, temporal } = getStack();
    const queue = queueName('shared');
    const workerEnv = { ...env, TEMPORAL_TASK_QUEUE: queue, LOG_LEVEL: 'debug' };
    // Each worker's log kept, so a run that did not close can be told from its workers' account.
    const logDirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'ptr-scale-')));
    children.push(await startWorkerProcess(workerEnv, logDirs[0]), await startWorkerProcess(workerEnv, logDirs[1]));
    const server = await startApi({ TEMPORAL_TASK_QUEUE: queue });
    try {
      const api = apiFor(sessionId, server.url);
      await createTask(api, 'default', 'shared');
      fake.script(() => ({ ...openaiText('done'), delayMs: 300 }));
      const url = await signedUrl(api, 'default', 'shared');
      const names = Array.from({ length: 24 }, (_, i) => `r${i}`);
      const triggers = await Promise.all(names.map((name) => postSigned(url, { text: name }, { 'run-id': name })));
      for (const t of triggers) expect(t.status, t.text).to.be.oneOf([200, 201]);
      // Generous: two worker processes of their own on a busy machine (a full suite beside other work took 60 s and more).
      const runs = await Promise.all(
        names.map((name, i) =>
          waitForRun(api, triggers[i]!.body.url, 100_000).catch(async (err: Error) => {
            // What Temporal says of a run that did not close: a failure's only evidence once the stack is gone.
            throw new Error(`${err.message}\n${await openWorkflow(temporal, runWorkflowId({ owner: username, profile: 'default', task: 'shared', run: name }))}\n${workerTrouble(logDirs)}`);
          }),
        ),
      );
      expect(runs.every((r) => r.status === 'ready')).to.equal(true);
      for (const run of runs) {
        const msgs = run.results.map((e: any) => e.msg);
        expect(msgs.filter((m: string) => m === 'run started'), run.name).to.have.length(1);
        expect(msgs.filter((m: string) => m === 'final answer'), run.name).to.have.length(1);
      }
      expect(fake.requests, 'one provider call per run').to.have.length(names.length);
      // Both workers did some of them: the identity of the worker that ran each provider call.
      const identities = new Set<string>();
      for (const name of names) {
        const { events } = await temporal.workflow.getHandle(runWorkflowId({ owner: username, profile: 'default', task: 'shared', run: name })).fetchHistory();
        for (const e of events!) if (e.activityTaskStartedEventAttributes?.identity) identities.add(e.activityTaskStartedEventAttributes.identity);
      }
      expect(identities.size, [...identities].join(', ')).to.equal(2);
    } finally {
      await server.close();
    }
  });
});

/** What the workers' logs say went wrong (warnings, errors, failed preparations), at most 40 lines. */
function workerTrouble(logDirs: string[]): string {
  const lines: string[] = [];
  for (const dir of logDirs) {
    for (const file of fs.readdirSync(dir)) {
      for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
        if (/"level":(4|5|6)0|preparing in the first model call failed|Error/.test(line)) lines.push(`${file}: ${line.slice(0, 600)}`);
      }
    }
  }
  return `worker logs (${lines.length} lines of trouble):\n${lines.slice(0, 40).join('\n')}`;
}

/** A workflow's state as Temporal describes it: status, history length, pending activities (attempts, failures, heartbeats). */
async function openWorkflow(temporal: Client, id: string): Promise<string> {
  try {
    const { status, historyLength, raw } = await temporal.workflow.getHandle(id).describe();
    const pending = (raw.pendingActivities ?? []).map((a) => ({
      activity: a.activityType?.name,
      state: a.state,
      attempt: a.attempt,
      lastFailure: a.lastFailure?.message,
      lastHeartbeat: a.lastHeartbeatTime?.seconds?.toString(),
      lastWorker: a.lastWorkerIdentity,
    }));
    return `workflow ${id}: ${status.name}, ${historyLength} events, pending activities ${JSON.stringify(pending)}, pending workflow task ${JSON.stringify(raw.pendingWorkflowTask ?? null)}`;
  } catch (err) {
    return `workflow ${id}: not described (${(err as Error).message})`;
  }
}
