import { expect } from 'chai';
import type { ManagedProcess } from '../helpers/managed-process';
import { until } from '../helpers/runs';
import type { CountingApi } from './client';
import { expectAllEndOnce, runsOf } from './runs';
import { faultStack, faultTask, faultUser, heldRuns, temporalClient, withMongo, type FaultStack } from './harness';
import { ledger } from './ledger';

/** A server the service depends on, and what the API must answer while it does not answer. */
export interface Dependency {
  name: 'mongodb' | 'temporal';
  /** Prefix of the scenario's user and tasks. */
  prefix: string;
  server(stack: FaultStack): ManagedProcess;
  /**
   * When the provider calls held since before the fault answer: at once (their runs' writes meet the fault), or once
   * the API's answers are checked (a run that closed meanwhile would not read as live).
   */
  answerHeld: 'at once' | 'after the checks';
  /** Checks the API's answers while the server does not answer; triggers the run named `during`. */
  expectDown(api: CountingApi, url: string, liveRun: string, during: string): Promise<void>;
  /** Once the server is back: a trigger of `during` again, before or after the runs end, and how it is answered. */
  retrigger: { when: 'before the runs end' | 'after the runs end'; check(url: string, during: string): Promise<void> };
  /** How long the scenario's runs may take to end once the server is back. */
  endTimeoutMs: number;
}

/** How each fault is made and undone, and how the ledger names it. */
const FAULTS = {
  stall: { fault: 'SIGSTOP', what: 'stalled (SIGSTOP), and after SIGCONT', make: (p: ManagedProcess) => p.stall(), undo: (p: ManagedProcess) => p.resume() },
  restart: { fault: 'stopped and started', what: 'stopped, and once it has started again with its data,', make: (p: ManagedProcess) => p.stop(), undo: (p: ManagedProcess) => p.start() },
};

/** What must survive a dependency's fault: the tasks (MongoDB) and the runs' workflow executions (Temporal). */
async function snapshot(api: CountingApi, workflowIds: string[]) {
  return until(
    'the tasks and the workflows, read back',
    async () => {
      const tasks = await api.get('/api/tasks/~/default');
      if (tasks.status !== 200) return undefined;
      const temporal = await temporalClient();
      const executions = await Promise.all(workflowIds.map(async (id) => (await temporal.workflow.getHandle(id).describe()).runId)).catch(() => undefined);
      return executions && { tasks: tasks.body, executions };
    },
    60_000,
  );
}

/**
 * One scenario: runs in flight (their provider calls held), the dependency stalled or stopped, the API's answers
 * checked while it is down (each within DEPENDENCY_TIMEOUT_MS and a margin), a run triggered meanwhile, the
 * dependency back; then the data is as it was, every run ends once, the run triggered during the fault called the
 * provider once, and a trigger of its name again is answered as the dependency expects.
 */
export function dependencyFault(dep: Dependency, how: keyof typeof FAULTS) {
  const fault = FAULTS[how];
  it(`answers within deadlines while ${dep.name === 'mongodb' ? 'MongoDB' : 'Temporal'} is ${fault.what} every run ends once, the one triggered meanwhile included`, async () => {
    const scenario = (ledger.scenario = `${dep.name} ${how}`);
    const { api } = await faultUser(dep.prefix);
    const stack = faultStack();
    const server = dep.server(stack);
    const task = `${dep.prefix}-${how}`;
    const url = await faultTask(api, task, { webhook: true });
    const held = await heldRuns(url, task, 6);
    const liveRun = `/api/runs/~/default/${task}/${held[0]}`;
    expect((await api.get(liveRun)).status, 'a read that caches the session').to.equal(200);
    const heldIds = runsOf(scenario).map((r) => r.workflowId);
    // Each run in flight holds a place among its owner's live runs: the final accounts check every one was given back.
    const marks = await withMongo((db) => db.collection<{ _id: string; run: string }>('live_runs').find({ run: { $in: heldIds } }).toArray());
    expect(marks.map((m) => m.run).sort(), 'the live-run places of the runs in flight').to.deep.equal([...heldIds].sort());
    const before = await snapshot(api, heldIds);
    const during = `${task}-during`;

    await fault.make(server);
    ledger.fault(`${dep.name} ${fault.fault}`);
    try {
      if (dep.answerHeld === 'at once') stack.script.open(task);
      await dep.expectDown(api, url, liveRun, during);
      if (dep.answerHeld === 'after the checks') stack.script.open(task);
      // The held calls' answers meet the fault for a while.
      await new Promise((r) => setTimeout(r, 2_000));
    } finally {
      stack.script.open(task);
      await fault.undo(server);
    }
    expect(await snapshot(api, heldIds), 'the tasks and the workflow executions, after the fault').to.deep.equal(before);
    if (dep.retrigger.when === 'before the runs end') await dep.retrigger.check(url, during);
    await expectAllEndOnce(runsOf(scenario), dep.endTimeoutMs);
    if (dep.retrigger.when === 'after the runs end') await dep.retrigger.check(url, during);
    expect(stack.script.calls(during), `one provider call for ${during}`).to.equal(1);
  });
}
