import crypto from 'node:crypto';
import { expect } from 'chai';
import { api as apiFor, sessionFor, signedIn, uniqueUser } from '../helpers/api';
import { openaiText, openaiToolCall, providerError } from '../helpers/fake-provider';
import { apiSpec, ManagedProcess, workerSpec } from '../helpers/managed-process';
import { freePort } from '../helpers/net';
import { startOtlpReceiver, SPAN_KIND, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';
import { everythingServer } from '../helpers/mcp-everything';
import { installServlet } from '../helpers/servlets';
import { getStack } from '../helpers/stack';
import { replayOptions } from '../helpers/replay';
import { workflowBundle } from '../../src/temporal/worker';
import { Worker } from '@temporalio/worker';
import { runWorkflowId } from '../../src/store/runs';

/**
 * Tracing is a process's global (its tracer provider, context manager and propagator), so these tests run an API and
 * a worker of their own as processes (src/server.ts, src/worker.ts, as operators run them), on the shared stack's
 * Temporal, database and fake provider, with a task queue of their own and OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
 * loopback receiver. They are stopped (SIGTERM) before the spans are read: what a stopping process still had batched
 * is sent then.
 */
async function startTracedPair(receiver: OtlpReceiver, settings: Record<string, string>) {
  const { env } = getStack();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const own = {
    ...env,
    PORT: String(port),
    PUBLIC_URL: url,
    TEMPORAL_TASK_QUEUE: `traced-${crypto.randomBytes(4).toString('hex')}`,
    LOG_LEVEL: 'info',
    // The MCP test server is on loopback.
    MCP_ALLOWLIST: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    ...settings,
  };
  const worker = new ManagedProcess('traced-worker', workerSpec(own));
  const api = new ManagedProcess('traced-api', apiSpec(own, url));
  await Promise.all([worker.start(), api.start()]);
  return { url, processes: [api, worker], stop: () => Promise.all([api.stop(), worker.stop()]) };
}

/** A run whose model calls a servlet's tool, then answers; every text of it unique, to be looked for in the spans. */
async function toolThenAnswer(apiUrl: string) {
  const mark = crypto.randomBytes(6).toString('hex');
  const secrets = {
    key: `sk-trace-key-${mark}-0123456789`,
    install: `install-secret-${mark}`,
    prompt: `prompt-text-${mark}`,
    toolArgument: `Ann-${mark}`,
    answer: `answer-text-${mark}`,
  };
  const username = uniqueUser('otel');
  const client = apiFor(await sessionFor(username), apiUrl);
  await installServlet(client, username, 'greeter', 'hello', { secret: secrets.install });
  await createTask(client, 'default', 'traced', { prompt: 'Say {{ text }}', key: secrets.key });
  getStack().fake.script([openaiToolCall([{ id: `call-${mark}`, name: 'hello__greet', arguments: { name: secrets.toolArgument } }]), openaiText(secrets.answer)]);
  const signed = await signedUrl(client, 'default', 'traced');
  const res = await postSigned(signed, { text: secrets.prompt }, { 'run-id': 'r1' });
  expect(res.status, res.text).to.equal(201);
  const path = new URL(res.body.url as string).pathname;
  const run = await waitForRun(client, res.body.url as string);
  expect(run.status, JSON.stringify(run.results)).to.equal('ready');
  const variantA = (await client.get('/api/profiles/~/default/tasks/traced/runs/r1')).body;
  return { run, variantA, path, secrets, callId: `call-${mark}` };
}

/** The span's ancestors in the trace, nearest first. */
function ancestors(span: ReceivedSpan, all: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(all.map((s) => [s.spanId, s]));
  const out: ReceivedSpan[] = [];
  for (let p = byId.get(span.parentSpanId); p; p = byId.get(p.parentSpanId)) out.push(p);
  return out;
}

/** The tree of one run: trigger → workflow → activity → model call, tool call, model call, all in the run's trace. */
function checkRunTree(spans: ReceivedSpan[], traceId: string, callId: string) {
  const trace = spans.filter((s) => s.traceId === traceId);
  const server = trace.filter((s) => s.kind === SPAN_KIND.server);
  expect(server.map((s) => s.name)).to.deep.equal(['POST /signed/tasks/:owner/:profile/:task']);
  const root = server[0]!;
  expect(root.parentSpanId).to.equal('');
  expect(root.service).to.equal('prompt-task-runner-api');
  expect(root.attributes).to.include({ 'http.request.method': 'POST', 'http.route': '/signed/tasks/:owner/:profile/:task', 'http.response.status_code': 201 });

  const workflow = trace.filter((s) => s.name === 'RunWorkflow:runTask');
  expect(workflow, 'the workflow span').to.have.length.at.least(1);
  expect(ancestors(workflow[0]!, trace).map((s) => s.spanId), 'the workflow continues the trigger').to.include(root.spanId);

  const chats = trace.filter((s) => s.name === 'chat test-model').sort((a, b) => a.startNs - b.startNs);
  const tools = trace.filter((s) => s.name === 'execute_tool greet');
  expect(chats, 'two model calls').to.have.length(2);
  expect(tools, 'one tool call').to.have.length(1);
  const tool = tools[0]!;
  expect(chats[0]!.startNs).to.be.below(tool.startNs);
  expect(tool.startNs).to.be.below(chats[1]!.startNs);
  for (const call of [...chats, tool]) {
    const up = ancestors(call, trace);
    expect(up[0]!.name, `${call.name} runs in its activity`).to.match(/^RunActivity:/);
    expect(up.map((s) => s.spanId), `${call.name} is under the workflow and the trigger`).to.include.members([workflow[0]!.spanId, root.spanId]);
    expect(call.service).to.equal('prompt-task-runner-worker');
  }
  for (const chat of chats) {
    expect(chat.kind).to.equal(SPAN_KIND.client);
    expect(chat.attributes).to.include({ 'gen_ai.system': 'openai', 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'test-model', 'gen_ai.response.model': 'fake' });
    expect(chat.attributes['gen_ai.usage.input_tokens']).to.be.a('number');
    expect(chat.attributes['gen_ai.usage.output_tokens']).to.be.a('number');
  }
  expect(chats[0]!.attributes['gen_ai.response.finish_reasons']).to.deep.equal(['tool_calls']);
  expect(chats[1]!.attributes['gen_ai.response.finish_reasons']).to.deep.equal(['stop']);
  expect(tool.attributes).to.include({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'greet', 'gen_ai.tool.call.id': callId, 'ptr.tool.kind': 'servlet', 'ptr.tool.install': 'hello' });
  return { chats, tool };
}

/** The run's workflow id from its Variant B read path (`/api/runs/<user>/<profile>/<task>/<run>`): src/temporal/ids.ts. */
const workflowIdOf = (path: string) => {
  const [owner, profile, task, run] = path.split('/').slice(3, 7).map(decodeURIComponent) as [string, string, string, string];
  return runWorkflowId({ owner, profile, task, run });
};

const textOf = (receiver: OtlpReceiver) => receiver.requests.map((r) => r.text).join('\n');

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  describe(`tracing: one run's trace over OTLP ${protocol}`, function () {
    this.timeout(240_000);
    let receiver: OtlpReceiver;
    let pair: Awaited<ReturnType<typeof startTracedPair>>;
    // JSON with the content captured, protobuf without: both protocols, both sides of the switch.
    const capture = protocol === 'http/json';
    before(async () => {
      receiver = await startOtlpReceiver();
      // One started run per user: a user's second run waits in the store and starts as the first ends (admission).
      const settings = { OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: String(capture), STARTED_RUNS_PER_USER: '1' };
      pair = await startTracedPair(receiver, settings);
    });
    after(async () => {
      await pair?.stop();
      await receiver?.close();
      getStack().fake.reset();
    });

    if (!capture) {
      it("traces an MCP tool call (execute_tool, kind mcp) and a failed model call's error type, no MCP header in any span", async () => {
        const mark = crypto.randomBytes(6).toString('hex');
        const header = `Bearer mcp-header-secret-${mark}`;
        const username = uniqueUser('otelmcp');
        const client = apiFor(await sessionFor(username), pair.url);
        const installed = await client.post('/api/profiles/~/default/installations', { name: 'ev', mcp: { url: (await everythingServer()).url, headers: { Authorization: header } } });
        expect(installed.status, installed.text).to.equal(201);
        await createTask(client, 'default', 'mcp');
        await createTask(client, 'default', 'failing');
        const { fake } = getStack();
        fake.script([openaiToolCall([{ id: `mcp-${mark}`, name: 'ev__echo', arguments: { message: 'hi' } }]), openaiText('echoed'), providerError('openai', 400, 'no such model')]);
        const runOf = async (task: string) => {
          const res = await postSigned(await signedUrl(client, 'default', task), { text: 'x' }, { 'run-id': 'r1' });
          expect(res.status, res.text).to.equal(201);
          return waitForRun(client, res.body.url as string);
        };
        const mcpRun = await runOf('mcp');
        expect(mcpRun.status, JSON.stringify(mcpRun.results)).to.equal('ready');
        const failed = await runOf('failing');
        expect(failed.status).to.equal('error');
        // Batched: the spans arrive within the batch processor's delay (5 s).
        const tool = await until('the MCP call span', () => receiver.spans.find((s) => s.traceId === mcpRun.trace_id && s.name === 'execute_tool echo'), 30_000);
        expect(tool.attributes).to.include({ 'gen_ai.tool.name': 'echo', 'gen_ai.tool.call.id': `mcp-${mark}`, 'ptr.tool.kind': 'mcp', 'ptr.tool.install': 'ev' });
        const chat = await until('the failed call span', () => receiver.spans.find((s) => s.traceId === failed.trace_id && s.name === 'chat test-model' && s.attributes['error.type']), 30_000);
        expect(chat.attributes['error.type']).to.equal('ProviderRejected');
        expect(chat.status, 'the error status').to.equal(2);
        expect(textOf(receiver)).not.to.include(`mcp-header-secret-${mark}`);
      });

      it("continues a run's trigger trace when its workflow starts later, from the store (its owner's admission turn)", async () => {
        const username = uniqueUser('oteladm');
        const client = apiFor(await sessionFor(username), pair.url);
        await createTask(client, 'default', 'waits');
        getStack().fake.script([{ ...openaiText('first'), delayMs: 2_000 }, openaiText('second')]);
        const signed = await signedUrl(client, 'default', 'waits');
        const first = await postSigned(signed, { text: 'a' }, { 'run-id': 'r1' });
        const second = await postSigned(signed, { text: 'b' }, { 'run-id': 'r2' });
        expect([first.status, second.status]).to.deep.equal([201, 201]);
        const runs = [await waitForRun(client, first.body.url as string), await waitForRun(client, second.body.url as string)];
        expect(runs.map((r) => r.status)).to.deep.equal(['ready', 'ready']);
        const waited = runs[1]!;
        const workflow = await until('the waiting run\'s workflow span', () =>
          receiver.spans.find((s) => s.name === 'RunWorkflow:runTask' && String(s.attributes.workflowId).endsWith(`/${username}/default/waits/r2`)), 30_000);
        expect(workflow.traceId, 'its workflow in its trigger\'s trace').to.equal(waited.trace_id);
        const trigger = await until('its trigger span', () => receiver.spans.find((s) => s.traceId === waited.trace_id && s.kind === SPAN_KIND.server), 30_000);
        expect(ancestors(workflow, receiver.spans).map((s) => s.spanId)).to.include(trigger.spanId);
      });
    }

    it(`sends the trigger, workflow, activity, model and tool call spans as one trace, the run's trace_id${capture ? ', with the content captured' : ', no content, key or secret in any'}`, async () => {
      const { run, variantA, secrets, callId, path } = await toolThenAnswer(pair.url);
      expect(run.trace_id).to.match(/^[0-9a-f]{32}$/);
      expect(variantA.trace_id, 'the Variant A read shows it too').to.equal(run.trace_id);
      await pair.stop();
      expect(receiver.requests.every((r) => r.contentType.startsWith(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf'))).to.equal(true);
      const { chats, tool } = checkRunTree(receiver.spans, run.trace_id as string, callId);
      // A traced run's history replays on a worker that traces and on one that does not (tracing turned off again).
      const history = await getStack().temporal.workflow.getHandle(workflowIdOf(path)).fetchHistory();
      for (const traced of [true, false]) {
        await Worker.runReplayHistory(replayOptions(await workflowBundle({ traced }), traced), history);
      }

      const text = textOf(receiver);
      // Never, capture or not: the provider key, the install's configuration.
      expect(text).not.to.include(secrets.key);
      expect(text).not.to.include(secrets.install);
      if (!capture) {
        for (const [what, secret] of Object.entries(secrets)) expect(text, `${what} in a span`).not.to.include(secret);
        for (const span of [...chats, tool]) expect(span.events).to.deep.equal([]);
        return;
      }
      const event = (span: ReceivedSpan, name: string) => span.events.find((e) => e.name === name)?.attributes;
      expect(String(event(chats[0]!, 'gen_ai.content.prompt')?.['gen_ai.prompt'])).to.include(secrets.prompt);
      expect(String(event(chats[0]!, 'gen_ai.content.completion')?.['gen_ai.completion'])).to.include(secrets.toolArgument);
      expect(String(event(chats[1]!, 'gen_ai.content.completion')?.['gen_ai.completion'])).to.include(secrets.answer);
      expect(String(event(tool, 'gen_ai.tool.input')?.['gen_ai.tool.call.arguments'])).to.include(secrets.toolArgument);
      expect(String(event(tool, 'gen_ai.tool.output')?.['gen_ai.tool.call.result'])).to.include(`Hello, ${secrets.toolArgument}!`);
    });
  });
}

describe('tracing with no collector listening', function () {
  this.timeout(120_000);
  after(() => getStack().fake.reset());

  it('ends runs ready with their trace_id, and the API and the worker stop on SIGTERM without being killed', async () => {
    // OTEL_EXPORTER_OTLP_ENDPOINT names a loopback port nothing listens on: every export is refused.
    const pair = await startTracedPair({ url: `http://127.0.0.1:${await freePort()}` } as OtlpReceiver, {});
    try {
      const { run, variantA } = await toolThenAnswer(pair.url);
      expect(run.trace_id).to.match(/^[0-9a-f]{32}$/);
      expect(variantA.trace_id).to.equal(run.trace_id);
    } finally {
      await pair.stop();
    }
    // Each stopped on its own (exit code 0), not by the SIGKILL stop() sends after its grace period.
    for (const p of pair.processes) expect(p.exits.at(-1), p.name).to.include({ code: 0, signal: null });
  });
});

describe('tracing off (the shared stack)', () => {
  it('gives run objects no trace_id', async () => {
    const { api } = await signedIn('untraced');
    await createTask(api, 'default', 'plain');
    getStack().fake.script([openaiText('fine')]);
    const res = await postSigned(await signedUrl(api, 'default', 'plain'), { text: 'x' }, { 'run-id': 'r1' });
    expect(res.status, res.text).to.equal(201);
    const run = await waitForRun(api, res.body.url as string);
    expect(run).not.to.have.property('trace_id');
    getStack().fake.reset();
  });
});
