import { expect } from 'chai';
import pLimit from 'p-limit';
import type { Api, ApiResponse } from '../helpers/api';
import { openaiText } from '../helpers/fake-provider';
import { testEnv } from '../helpers/env';
import { createTask, until } from '../helpers/runs';
import { endedOnce } from '../faults/runs';
import { clusterStack } from './harness';
import { balanced, postSignedTo, signedInOnBoth, via } from './clients';

/** How many runs the fault scenario triggers (CLUSTER_RUNS overrides it). */
const RUNS = testEnv.clusterRuns ?? 500;

describe('the cluster topology (real temporal-server and FerretDB on PostgreSQL, two APIs, two workers)', () => {
  afterEach(() => clusterStack().fake.reset());

  it('walks the contract with requests alternating between the two APIs', async () => {
    const { apiUrls, fake } = clusterStack();
    const { apis } = await signedInOnBoth();
    const [a1, a2] = apis as [Api, Api];
    await createTask(a1, 'default', 'walk');
    const read = await a2.get('/api/tasks/~/default/walk');
    expect(read.status, read.text).to.equal(200);
    const signed = await a1.post('/api/tasks/~/default/walk/signed');
    expect(signed.status, signed.text).to.equal(200);

    // Triggered at the second API, read at the first.
    const started = await postSignedTo(via(signed.body.url, apiUrls[1]!), { text: 'hello' }, { 'run-id': 'first' });
    expect(started.status, started.text).to.equal(201);
    const done = await until('the run to close', async () => {
      const res = await a1.get('/api/runs/~/default/walk/first');
      return res.status === 200 && (res.body.status === 'ready' || res.body.status === 'error') && res.body;
    });
    expect(done.status, JSON.stringify(done.results)).to.equal('ready');
    expect(endedOnce(done)).to.equal(undefined);

    // A run that stays live (the provider holds its answer), cancelled at the other API than the one it started at.
    fake.script([{ ...openaiText('late'), delayMs: 60_000 }]);
    const live = await postSignedTo(via(signed.body.url, apiUrls[0]!), { text: 'wait' }, { 'run-id': 'second' });
    expect(live.status, live.text).to.equal(201);
    await until('the provider to be called', () => fake.requests.length > 0);
    const cancel = await a2.post('/api/runs/~/default/walk/second/cancel');
    expect(cancel.status, cancel.text).to.equal(202);
    const cancelled = await until('the cancelled run to close', async () => {
      const res = await a1.get('/api/runs/~/default/walk/second');
      return res.status === 200 && res.body.status === 'error' && res.body;
    });
    expect(cancelled.results.at(-1).error).to.match(/cancelled/);

    const list = await a2.get('/api/runs/~/default/walk');
    expect(list.status, list.text).to.equal(200);
    expect(list.body.map((r: { name: string }) => r.name).sort()).to.deep.equal(['first', 'second']);

    const deleted = await a1.delete('/api/tasks/~/default/walk');
    expect(deleted.status, deleted.text).to.be.oneOf([200, 204]);
    await until('the other API to see the task gone', async () => (await a2.get('/api/tasks/~/default/walk')).status === 404, 30_000);
  });

  it(`ends each of ${RUNS} runs exactly once while a worker is SIGKILLed, an API restarted and PostgreSQL stopped for 20 s`, async function () {
    this.timeout(480_000);
    const stack = clusterStack();
    const runs = RUNS;
    // Answers take a while, so that runs are in flight when the faults come.
    stack.fake.script(() => ({ ...openaiText('ok'), delayMs: 200 + Math.floor(Math.random() * 800) }));
    const { user, apis } = await signedInOnBoth();
    const send = balanced(apis);
    await createTask(apis[0]!, 'default', 'load');
    const signed = (await send((a) => a.post('/api/tasks/~/default/load/signed'))).body.url as string;
    const names = Array.from({ length: runs }, (_, i) => `r${String(i).padStart(4, '0')}`);

    const limit = pLimit(16);
    let triggered = 0;
    let postgresStoppedAt = 0;
    let postgresDownMs = 0;
    const faults = (async () => {
      await until('a quarter of the runs triggered', () => triggered >= runs / 4, 120_000);
      await stack.workers[0]!.kill();
      await new Promise((r) => setTimeout(r, 3_000));
      await stack.workers[0]!.ensureRunning();
      await until('half of the runs triggered', () => triggered >= runs / 2, 120_000);
      await stack.apis[1]!.stop();
      await stack.apis[1]!.start();
      // Temporal's persistence and the store (FerretDB's backend) go away together, for 20 s.
      await until('three quarters of the runs triggered', () => triggered >= (3 * runs) / 4, 180_000);
      await stack.stopPostgres();
      postgresStoppedAt = Date.now();
      await new Promise((r) => setTimeout(r, 20_000));
      await stack.startPostgres();
      postgresDownMs = Date.now() - postgresStoppedAt;
    })();
    let turn = 0;
    await Promise.all(
      names.map((name) =>
        limit(async () => {
          // Through either API (the other when one does not answer), with the same run name each time.
          const res = await balancedTrigger(stack.apiUrls, signed, name, turn++);
          expect(res.status, `${name}: ${res.text}`).to.be.oneOf([200, 201]);
          triggered++;
        }),
      ),
    );
    await faults;
    expect(postgresDownMs, 'PostgreSQL was stopped while runs were triggered').to.be.at.least(20_000);

    const closed = new Map<string, any>();
    await until(
      `all ${runs} runs to close`,
      async () => {
        await Promise.all(
          names.filter((n) => !closed.has(n)).map((n) =>
            limit(async () => {
              const res = await send((a) => a.get(`/api/runs/~/default/load/${n}`));
              if (res.status === 200 && (res.body.status === 'ready' || res.body.status === 'error')) closed.set(n, res.body);
            }),
          ),
        );
        return closed.size === runs;
      },
      240_000,
    );
    for (const [name, run] of closed) {
      expect(endedOnce(run), `${name}: ${JSON.stringify(run.results)}`).to.equal(undefined);
      expect(run.status, `${name}: ${JSON.stringify(run.results)}`).to.equal('ready');
    }
    const list = await send((a) => a.get('/api/runs/~/default/load?limit=1000'));
    expect(list.body.map((r: { name: string }) => r.name).sort()).to.deep.equal(names);

    // One workflow per run, each completed once: Temporal's SQL visibility on PostgreSQL agrees with the store. A run
    // is ready in the store a moment before its workflow completes, and visibility follows the workflow a moment later.
    const prefix = `run/${user}/default/load/`;
    const listExecutions = async () => {
      const found = new Map<string, string[]>();
      for await (const wf of stack.client.workflow.list({ query: `WorkflowId STARTS_WITH "${prefix}"` })) {
        found.set(wf.workflowId, [...(found.get(wf.workflowId) ?? []), wf.status.name]);
      }
      return found;
    };
    let executions = await listExecutions();
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && [...executions.values()].some((s) => s.join() !== 'COMPLETED'); ) {
      await new Promise((r) => setTimeout(r, 1_000));
      executions = await listExecutions();
    }
    expect([...executions.keys()].sort()).to.deep.equal(names.map((n) => prefix + n));
    for (const [id, statuses] of executions) expect(statuses, id).to.deep.equal(['COMPLETED']);
    // Found by our search attributes too (registered on the real server; SQL visibility answers the query).
    const { count } = await stack.client.workflow.count(`Owner = "${user}" AND Profile = "default" AND Task = "load" AND Runner = "openai"`);
    expect(count).to.equal(runs);
  });
});

/** Triggers run `name` at API `turn` mod 2, then at the other while one refuses or answers 503, as a balancer would. */
async function balancedTrigger(apiUrls: string[], signed: string, name: string, turn: number): Promise<ApiResponse> {
  // Long enough to outlast the PostgreSQL outage (20 s) and the recovery after it.
  const deadline = Date.now() + 120_000;
  for (let i = turn; ; i++) {
    const res = await postSignedTo(via(signed, apiUrls[i % apiUrls.length]!), { text: name }, { 'run-id': name }).catch(() => undefined);
    if (res && res.status !== 503) return res;
    if (Date.now() > deadline) throw new Error(`no API accepted ${name} within 120 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
