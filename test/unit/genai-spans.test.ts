import { context, propagation, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ApplicationFailure } from '@temporalio/common';
import { expect } from 'chai';
import { AsyncLocalStorageContextManager } from '../../src/telemetry/context-manager';
import { CONTENT_MAX_CHARS, traceChat, traceToolCall } from '../../src/telemetry/genai';

const answer = { text: 'the answer', toolCalls: [], usage: { input: 12, output: 3 }, stopReason: 'stop', model: 'gpt-x-2026' };

describe('GenAI spans of model and tool calls (src/telemetry/genai.ts)', () => {
  const exporter = new InMemorySpanExporter();
  before(() => {
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  });
  afterEach(() => exporter.reset());
  // The provider is the process's global: the other unit tests run without one.
  after(() => {
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('names a model call chat <model> with its tokens and finish reason, and no content when capture is off', async () => {
    await traceChat({ system: 'openai', model: 'gpt-x', capture: false, prompt: () => expect.fail('the prompt is not read when capture is off') }, async () => answer);
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).to.equal('chat gpt-x');
    expect(span!.attributes).to.deep.include({
      'gen_ai.system': 'openai',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.response.model': 'gpt-x-2026',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 3,
    });
    expect(span!.attributes['gen_ai.response.finish_reasons']).to.deep.equal(['stop']);
    expect(span!.events).to.deep.equal([]);
  });

  it('captures the prompt and the answer as events, each cut to CONTENT_MAX_CHARS', async () => {
    const long = 'p'.repeat(CONTENT_MAX_CHARS * 3);
    await traceChat({ system: 'anthropic', model: 'claude-x', capture: true, prompt: () => [{ role: 'user', text: long }] }, async () => answer);
    const [span] = exporter.getFinishedSpans();
    const prompt = String(span!.events.find((e) => e.name === 'gen_ai.content.prompt')!.attributes!['gen_ai.prompt']);
    expect(prompt.length).to.be.below(CONTENT_MAX_CHARS + 64);
    expect(prompt).to.match(/…\[\d+ more characters\]$/);
    expect(String(span!.events.find((e) => e.name === 'gen_ai.content.completion')!.attributes!['gen_ai.completion'])).to.include('the answer');
  });

  it("gives a failed call the failure's type as error.type, and rethrows it", async () => {
    const failure = ApplicationFailure.retryable('429', 'ProviderUnavailable');
    await traceChat({ system: 'openai', model: 'gpt-x', capture: false, prompt: () => [] }, async () => {
      throw failure;
    }).then(
      () => expect.fail('should throw'),
      (err) => expect(err).to.equal(failure),
    );
    const [span] = exporter.getFinishedSpans();
    expect(span!.attributes['error.type']).to.equal('ProviderUnavailable');
    expect(span!.status.code).to.equal(2);
  });

  it('names a tool call execute_tool <tool>, marks an error result, and nests calls made inside it', async () => {
    const call = { tool: 'greet', callId: 'c1', kind: 'servlet' as const, install: 'hello', capture: false, arguments: { name: 'x' } };
    await traceToolCall(call, () => traceChat({ system: 'openai', model: 'inner', capture: false, prompt: () => [] }, async () => answer).then(() => ({ isError: true, content: [] })), (r) => r);
    const spans = exporter.getFinishedSpans();
    const tool = spans.find((s) => s.name === 'execute_tool greet')!;
    const inner = spans.find((s) => s.name === 'chat inner')!;
    expect(tool.attributes).to.deep.include({ 'gen_ai.tool.name': 'greet', 'gen_ai.tool.call.id': 'c1', 'ptr.tool.kind': 'servlet', 'ptr.tool.install': 'hello', 'error.type': 'tool_error' });
    expect(inner.parentSpanId, 'the model call made during the tool call is its child').to.equal(tool.spanContext().spanId);
  });
});
