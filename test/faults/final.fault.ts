import { expect } from 'chai';
import mongoose from 'mongoose';
import { until } from '../helpers/runs';
import { endedOnce, waitForRuns } from './runs';
import { faultStack, temporalClient } from './harness';
import { ledger } from './ledger';
import { SecretScanner } from './scan';

/**
 * The suite's closing accounts, over everything every scenario did: each accepted run read again as its owner (it
 * ended, once), the run records and the workflows (one each, none unaccounted for), and a scan of every document,
 * every workflow history and every process log for the secrets the suite handed the service.
 */
describe('faults: the accounts at the end', () => {
  before(() => (ledger.scenario = 'final'));

  it('lost no accepted run and ran none twice', async () => {
    const runs = [...ledger.runs.values()];
    const lost: string[] = [];
    const duplicated: string[] = [];
    const ended: Record<string, number> = { ready: 0, error: 0 };
    const closed = await waitForRuns(runs, 60_000, { partial: true });
    for (const r of runs) {
      const run = closed.get(r.workflowId);
      if (!run) {
        lost.push(r.workflowId);
        continue;
      }
      ended[run.status] = (ended[run.status] ?? 0) + 1;
      const why = endedOnce(run);
      if (why) duplicated.push(`${r.workflowId}: ${why} (${run.results.map((e: any) => e.msg).join(' | ')})`);
    }

    // The records: one per accepted run (the run name is the _id), each closed; none the suite never accepted.
    const client = new mongoose.mongo.MongoClient(faultStack().mongoUrl, { serverSelectionTimeoutMS: 10_000 });
    const records = await client
      .connect()
      .then((c) => c.db().collection('runs').find({}, { projection: { _id: 1, status: 1 } }).toArray())
      .finally(() => client.close());
    const unaccounted = records.filter((d) => !ledger.runs.has(String(d._id))).map((d) => `${String(d._id)} (${d.status})`);
    const open = records.filter((d) => d.status !== 'ready' && d.status !== 'error').map((d) => `${String(d._id)} (${d.status})`);

    // The workflows: each accepted run started once (continue-as-new aside).
    const temporal = await temporalClient();
    const starts = new Map<string, number>();
    for await (const w of temporal.workflow.list({ query: "WorkflowType = 'runTask'" })) {
      const { events } = await temporal.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
      if (!events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId) starts.set(w.workflowId, (starts.get(w.workflowId) ?? 0) + 1);
    }
    for (const [id, n] of starts) if (n > 1) duplicated.push(`${id}: ${n} workflow executions`);
    for (const r of runs) if (!starts.has(r.workflowId) && !lost.includes(r.workflowId)) lost.push(`${r.workflowId} (no workflow)`);

    Object.assign(ledger.final, {
      runsEnded: ended.ready! + ended.error!,
      runsEndedReady: ended.ready,
      runsEndedError: ended.error,
      runsLost: lost.length,
      runsDuplicated: duplicated.length,
      runRecords: records.length,
      recordsUnaccounted: unaccounted.length,
      recordsOpen: open.length,
    });
    if (lost.length) ledger.notes.push(`lost: ${lost.slice(0, 10).join(', ')}`);
    if (duplicated.length) ledger.notes.push(`duplicated: ${duplicated.slice(0, 10).join(', ')}`);
    if (unaccounted.length) ledger.notes.push(`records no trigger was answered for: ${unaccounted.slice(0, 10).join(', ')}`);
    expect(lost, 'runs lost').to.deep.equal([]);
    expect(duplicated, 'runs duplicated').to.deep.equal([]);
    expect(open, 'run records left open').to.deep.equal([]);
    expect(unaccounted, 'run records of no accepted run').to.deep.equal([]);
    expect(runs.length, 'runs accepted').to.be.greaterThan(0);
  });

  it('left no provider key, install secret or webhook secret in MongoDB, in any workflow history or in any process log', async function () {
    this.timeout(300_000);
    const stack = faultStack();
    // Canaries, to show the scan can find what is there: a user name (in documents, histories and logs) and a
    // prompt (in documents, and in histories only inside encoded payloads).
    const run = [...ledger.runs.values()].find((r) => r.text)!;
    const canaries = [
      { kind: 'canary: user name', value: run.workflowId.split('/')[1]! },
      { kind: 'canary: prompt', value: `Say ${run.text}` },
    ];
    const scanner = new SecretScanner([...ledger.secrets, ...canaries]);
    await scanner.scanMongo(stack.mongoUrl);
    await scanner.scanTemporal(await temporalClient());
    scanner.scanFiles(stack.processes.flatMap((p) => p.logFiles));
    const found = (kind: string) => new Set(scanner.hits.filter((h) => h.kind === kind).map((h) => h.where.split(' ')[0]));
    expect([...found('canary: user name')].sort(), 'where the user name canary was found').to.deep.equal(['log', 'mongodb', 'temporal']);
    expect([...found('canary: prompt')].sort(), 'where the prompt canary was found').to.deep.include.members(['mongodb', 'temporal']);

    const hits = scanner.hits.filter((h) => !h.kind.startsWith('canary'));
    Object.assign(ledger.final, { secretHits: hits.length, scanned: scanner.scanned });
    for (const hit of hits.slice(0, 20)) ledger.notes.push(`secret found: ${hit.kind} in ${hit.where}`);
    expect(ledger.secrets.length).to.be.greaterThan(0);
    expect(hits).to.deep.equal([]);
  });

  it('delivered a webhook, signed with the task\'s secret, for every run of the task that has one', async () => {
    const stack = faultStack();
    const hooked = [...ledger.runs.values()].filter((r) => r.workflowId.split('/')[3] === 'load-0').map((r) => r.workflowId.split('/')[4]!);
    const delivered = () => new Set(stack.webhookDeliveries.map((d) => d.run));
    await until('a delivery for every run of the task with a webhook', () => hooked.every((name) => delivered().has(name)), 60_000).catch(() => undefined);
    const unverified = stack.webhookDeliveries.filter((d) => d.error).map((d) => d.error);
    Object.assign(ledger.final, { webhookDeliveries: stack.webhookDeliveries.length, webhookRunsDelivered: hooked.filter((name) => delivered().has(name)).length });
    expect(hooked.length).to.be.greaterThan(0);
    expect(unverified, 'deliveries whose signature did not verify').to.deep.equal([]);
    expect(hooked.filter((name) => !delivered().has(name)), 'runs without a delivery').to.deep.equal([]);
  });

  it('answered every request without an unexpected 5xx or a hang, and no process crashed', () => {
    const crashes = faultStack().processes.flatMap((p) => p.exits.filter((e) => !e.expected));
    Object.assign(ledger.final, { crashes: crashes.length });
    expect(ledger.counts.unexpected5xx, 'unexpected 5xx answers').to.deep.equal([]);
    expect(ledger.counts.noAnswer, 'requests left without an answer').to.deep.equal([]);
    expect(crashes, 'processes that exited on their own').to.deep.equal([]);
  });
});
