import { isDeepStrictEqual } from 'node:util';
import { expect } from 'chai';
import { until } from '../helpers/runs';
import { endedOnce, waitForRuns } from './runs';
import { faultStack, temporalClient, withMongo } from './harness';
import { closedRun, ledger } from './ledger';
import { SecretScanner, type SecretHit } from './scan';

/**
 * The suite's closing accounts, over everything every scenario did: each accepted run read again as its owner (it
 * ended, once, and reads as its scenario first read it closed), the run records and the workflows (one each, none
 * unaccounted for), the live-run bookkeeping (every place given back, every close announced), every webhook
 * delivered as the run closed, and a scan of every document, every workflow history and every process log for the
 * secrets the suite handed the service.
 */
describe('faults: the accounts at the end', () => {
  before(() => (ledger.scenario = 'final'));

  it('lost no accepted run, ran none twice, and every run reads as it did when it closed', async () => {
    const runs = [...ledger.runs.values()];
    const lost: string[] = [];
    const duplicated: string[] = [];
    const changed: string[] = [];
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
      // Its scenario read it closed; a later write (another ending, a call made again) would show as a difference.
      if (!r.closed) changed.push(`${r.workflowId}: its scenario never read it closed`);
      else if (!isDeepStrictEqual(closedRun(run), r.closed)) changed.push(`${r.workflowId}: ${JSON.stringify(r.closed)} then ${JSON.stringify(closedRun(run))}`);
    }

    // The records: one per accepted run (the run name is the _id), each closed; none the suite never accepted.
    const records = await withMongo((db) => db.collection('runs').find({}, { projection: { _id: 1, status: 1 } }).toArray());
    const unaccounted = records.filter((d) => !ledger.runs.has(String(d._id))).map((d) => `${String(d._id)} (${d.status})`);
    const open = records.filter((d) => d.status !== 'ready' && d.status !== 'error').map((d) => `${String(d._id)} (${d.status})`);

    // The workflows, as Temporal lists them (no history read): each accepted run started once, an execution that
    // continued as new aside; none that no trigger was answered for.
    const temporal = await temporalClient();
    const executions = new Map<string, { all: number; continued: number }>();
    for await (const w of temporal.workflow.list({ query: "WorkflowType = 'runTask'" })) {
      const e = executions.get(w.workflowId) ?? { all: 0, continued: 0 };
      e.all++;
      if (w.status.name === 'CONTINUED_AS_NEW') e.continued++;
      executions.set(w.workflowId, e);
    }
    for (const [id, e] of executions) if (e.all - e.continued > 1) duplicated.push(`${id}: ${e.all - e.continued} workflow executions (${e.continued} continued as new)`);
    for (const r of runs) if (!executions.has(r.workflowId) && !lost.includes(r.workflowId)) lost.push(`${r.workflowId} (no workflow)`);
    const workflowsUnaccounted = [...executions.keys()].filter((id) => !ledger.runs.has(id));

    Object.assign(ledger.final, {
      runsEnded: ended.ready! + ended.error!,
      runsEndedReady: ended.ready,
      runsEndedError: ended.error,
      runsLost: lost.length,
      runsDuplicated: duplicated.length,
      runsChangedAfterClose: changed.length,
      runRecords: records.length,
      recordsUnaccounted: unaccounted.length,
      recordsOpen: open.length,
      runWorkflows: executions.size,
      runWorkflowsContinuedAsNew: [...executions.values()].reduce((n, e) => n + e.continued, 0),
      workflowsUnaccounted: workflowsUnaccounted.length,
    });
    if (lost.length) ledger.notes.push(`lost: ${lost.slice(0, 10).join(', ')}`);
    if (duplicated.length) ledger.notes.push(`duplicated: ${duplicated.slice(0, 10).join(', ')}`);
    if (changed.length) ledger.notes.push(`changed after they closed: ${changed.slice(0, 10).join(', ')}`);
    if (unaccounted.length) ledger.notes.push(`records no trigger was answered for: ${unaccounted.slice(0, 10).join(', ')}`);
    if (workflowsUnaccounted.length) ledger.notes.push(`workflows no trigger was answered for: ${workflowsUnaccounted.slice(0, 10).join(', ')}`);
    expect(lost, 'runs lost').to.deep.equal([]);
    expect(duplicated, 'runs duplicated').to.deep.equal([]);
    expect(changed, 'runs that changed after they closed').to.deep.equal([]);
    expect(open, 'run records left open').to.deep.equal([]);
    expect(unaccounted, 'run records of no accepted run').to.deep.equal([]);
    expect(workflowsUnaccounted, 'run workflows of no accepted run').to.deep.equal([]);
    expect(runs.length, 'runs accepted').to.be.greaterThan(0);
  });

  it('gave back every live run\'s place and announced every close, whatever failed on the way', async () => {
    // A close whose announcement failed (the store or Temporal did not answer) is noted in `deferred_announcements`,
    // and the reconciler (every RECONCILE_INTERVAL_MS) announces it: a few of its passes.
    const waitMs = 10 * Number(faultStack().env.RECONCILE_INTERVAL_MS);
    const left = () => withMongo(async (db) => ({
      deferred: await db.collection('deferred_announcements').find({}).toArray(),
      markers: await db.collection('live_runs').find({}).toArray(),
    }));
    let state = await left();
    await until('the reconciler to announce every deferred close', async () => {
      state = await left();
      return state.deferred.length === 0 && state.markers.length === 0;
    }, waitMs).catch(() => undefined);
    Object.assign(ledger.final, {
      deferredAnnouncementsLeft: state.deferred.length,
      liveRunMarkersLeft: state.markers.length,
    });
    expect(state.deferred.map((d) => String(d._id)), 'closes never announced (deferred_announcements)').to.deep.equal([]);
    expect(state.markers.map((d) => String(d._id)), 'runs still holding a live-run place (live_runs)').to.deep.equal([]);
  });

  it('left no provider key, install secret, webhook secret, MCP header or access token in MongoDB, in any workflow history, in any process log, in any answer of the API, in any webhook delivery or in any span', async function () {
    this.timeout(300_000);
    const stack = faultStack();
    // Canaries, to show the scan can find what is there: a user name (in documents, histories and logs, a worker's
    // among them: the provider scenario's runs fail activities, which the worker logs with their workflow ids) and a
    // prompt (in documents, in the run's answers, and in histories only inside encoded payloads); and a delivered
    // run's task (in its webhook delivery).
    const run = [...ledger.runs.values()].find((r) => r.scenario === 'provider' && r.text)!;
    expect(run, 'a run of the provider scenario').to.not.equal(undefined);
    const delivered = stack.webhookDeliveries.find((d) => d.workflowId);
    expect(delivered, 'a verified webhook delivery').to.not.equal(undefined);
    const canaries = [
      { kind: 'canary: user name', value: run.workflowId.split('/')[1]! },
      { kind: 'canary: prompt', value: `Say ${run.text}` },
      { kind: 'canary: delivered task', value: delivered!.workflowId!.split('/').slice(1, 4).join('/') },
      // The tasks' model: in every model call's span (gen_ai.request.model).
      { kind: 'canary: model', value: 'fault-model' },
    ];
    // The spans the services still batched (BatchSpanProcessor: every 5 s) reach the receiver first.
    await new Promise((r) => setTimeout(r, 6_000));
    const scanner = new SecretScanner([...ledger.secrets, ...canaries]);
    await scanner.scanMongo(stack.mongoUrl);
    await scanner.scanTemporal(await temporalClient());
    scanner.scanFiles(stack.processes.flatMap((p) => p.logFiles));
    scanner.scanAnswers(ledger.answers);
    scanner.scanWebhooks(stack.webhookDeliveries);
    scanner.scanSpans(stack.traces);
    const answered = ledger.counts.requests - ledger.counts.unreachable.length - ledger.counts.noAnswer.length;
    expect(scanner.scanned.answers, 'every answer scanned (requests neither refused nor unanswered)').to.equal(answered);
    expect(scanner.scanned.webhookDeliveries, 'every delivery scanned').to.equal(stack.webhookDeliveries.length);
    const found = (kind: string) => new Set(scanner.hits.filter((h) => h.kind === kind).map((h) => h.where.split(' ')[0]));
    expect([...found('canary: user name')].sort(), 'where the user name canary was found').to.include.members(['log', 'mongodb', 'temporal']);
    expect([...found('canary: prompt')], 'the prompt canary in an answer').to.include('answer');
    expect([...found('canary: delivered task')], 'the delivered task canary in a webhook delivery').to.include('webhook');
    expect(scanner.scanned.spans, 'spans received from the services').to.be.greaterThan(0);
    expect([...found('canary: model')], 'the model canary in the spans').to.include('spans');
    const workerLogs = stack.worker.logFiles.map((f) => `log ${f}`);
    expect(scanner.hits.filter((h) => h.kind === 'canary: user name' && workerLogs.includes(h.where)), 'the user name canary in a worker log').to.not.deep.equal([]);
    expect([...found('canary: prompt')].sort(), 'where the prompt canary was found').to.deep.include.members(['mongodb', 'temporal']);

    // An install's configuration goes back to its owner, in the answers of the installations routes: the Python
    // client runs tools locally with it (compat.md, "List"). Nowhere else, and never a key, a webhook secret or an
    // MCP install's header value, URL query, OAuth client secret or token (`mcp secret`: not even to the owner).
    // An access token is shown once, in the answer that made it.
    const toOwner = (h: SecretHit) =>
      (h.kind === 'install secret' && /^answer (GET|POST) \/api\/profiles\/~\/[^/]+\/installations \d+$/.test(h.where)) ||
      (h.kind === 'access token' && h.where === 'answer POST /api/tokens/~ 201');
    const hits = scanner.hits.filter((h) => !h.kind.startsWith('canary') && !toOwner(h));
    Object.assign(ledger.final, { secretHits: hits.length, installConfigsToOwner: scanner.hits.filter(toOwner).length, scanned: scanner.scanned });
    for (const hit of hits.slice(0, 20)) ledger.notes.push(`secret found: ${hit.kind} in ${hit.where}`);
    expect(ledger.secrets.length).to.be.greaterThan(0);
    // The scan finds tokens where they are: in the answers that made them.
    expect(scanner.hits.filter((h) => h.kind === 'access token' && toOwner(h)), 'access tokens in the answers that made them').to.not.deep.equal([]);
    expect(hits).to.deep.equal([]);
  });

  it('delivered every run of every task with a webhook, signed with the task\'s secret, as the run closed', async () => {
    const stack = faultStack();
    const hooked = [...ledger.runs.values()].filter((r) => ledger.webhookTasks.has(r.workflowId.split('/').slice(1, 4).join('/')));
    const delivered = () => new Set(stack.webhookDeliveries.map((d) => d.workflowId));
    await until('a delivery for every run of a task with a webhook', () => hooked.every((r) => delivered().has(r.workflowId)), 60_000).catch(() => undefined);
    const unverified = stack.webhookDeliveries.filter((d) => d.error).map((d) => d.error);
    // Each delivery shows the run as it closed: its status and its entries.
    const differing = stack.webhookDeliveries
      .filter((d) => d.workflowId && !isDeepStrictEqual(d.run, ledger.runs.get(d.workflowId)?.closed))
      .map((d) => `${d.workflowId}: delivered ${JSON.stringify(d.run)}, closed ${JSON.stringify(ledger.runs.get(d.workflowId!)?.closed)}`);
    const tasks = new Set(hooked.map((r) => r.workflowId.split('/')[3]));
    Object.assign(ledger.final, {
      webhookTasks: ledger.webhookTasks.size,
      webhookDeliveries: stack.webhookDeliveries.length,
      webhookRuns: hooked.length,
      webhookRunsDelivered: hooked.filter((r) => delivered().has(r.workflowId)).length,
    });
    for (const d of differing.slice(0, 10)) ledger.notes.push(`webhook delivery unlike the closed run: ${d}`);
    expect([...tasks].sort(), 'tasks with a webhook that ran').to.include.members(['load-0', 'mg-restart', 'mg-stall', 'tp-restart', 'tp-stall']);
    expect(unverified, 'deliveries that did not verify with their task\'s secret').to.deep.equal([]);
    expect(hooked.filter((r) => !delivered().has(r.workflowId)).map((r) => r.workflowId), 'runs without a delivery').to.deep.equal([]);
    expect(differing, 'deliveries unlike the run as it closed').to.deep.equal([]);
  });

  it('answered every request without an unexpected 5xx or a hang, and no process crashed', () => {
    const crashes = faultStack().processes.flatMap((p) => p.exits.filter((e) => !e.expected));
    Object.assign(ledger.final, { crashes: crashes.length });
    expect(ledger.counts.unexpected5xx, 'unexpected 5xx answers').to.deep.equal([]);
    expect(ledger.counts.noAnswer, 'requests left without an answer').to.deep.equal([]);
    // Only the API's own death leaves a request unanswered by a connection: a stalled dependency never may.
    expect(ledger.counts.unreachable.filter((u) => u.scenario !== 'api'), 'connections the API refused or cut while it was up').to.deep.equal([]);
    expect(crashes, 'processes that exited on their own').to.deep.equal([]);
  });
});
