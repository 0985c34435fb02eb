import { expect } from 'chai';
import { callAnthropic } from '../../activities/providers/anthropic';
import type { ProviderCall } from '../../activities/providers/call';
import { createProviderFetch } from '../../activities/providers/http';
import { callOpenAI } from '../../activities/providers/openai';
import { anthropicText, anthropicToolUse, openaiText, openaiToolCall, startFakeProvider, type FakeProvider } from '../helpers/fake-provider';

// The real SDKs against the fake provider on loopback.
describe('provider streaming', () => {
  let fake: FakeProvider;
  const pool = createProviderFetch();
  before(async () => {
    fake = await startFakeProvider();
  });
  afterEach(() => fake.reset());
  after(async () => {
    await fake.close();
    await pool.close();
  });

  const call = (baseURL: string, onText?: (t: string) => void): ProviderCall & { maxTokens: number } => ({
    key: 'sk-secret-key-1234',
    fetch: pool.fetch,
    baseURL,
    model: 'fake',
    maxTokens: 100,
    conversation: [{ role: 'user', text: 'hi' }],
    tools: [],
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    ...(onText ? { onText } : {}),
  });

  it('gives onText growing snapshots of an OpenAI answer and the same answer with its usage', async () => {
    fake.script([{ ...openaiText('abc', { input: 7, output: 3 }), chunks: ['a', 'b', 'c'], chunkDelayMs: 20 }]);
    const seen: string[] = [];
    const answer = await callOpenAI(call(fake.openaiBaseUrl, (t) => seen.push(t)));
    expect(seen).to.deep.equal(['a', 'ab', 'abc']);
    expect(answer).to.deep.equal({ text: 'abc', toolCalls: [], usage: { input: 7, output: 3 }, stopReason: 'stop', model: 'fake' });
    expect(fake.requests[0]!.body).to.include({ stream: true });
    expect(fake.requests[0]!.body.stream_options).to.deep.equal({ include_usage: true });
  });

  it('assembles streamed OpenAI tool calls with their arguments', async () => {
    fake.script([openaiToolCall([{ id: 'c1', name: 'lookup', arguments: { q: 'x', n: 2 } }], { input: 4, output: 5 })]);
    const answer = await callOpenAI(call(fake.openaiBaseUrl, () => {}));
    expect(answer.toolCalls).to.deep.equal([{ id: 'c1', name: 'lookup', arguments: { q: 'x', n: 2 } }]);
    expect(answer.usage).to.deep.equal({ input: 4, output: 5 });
    expect(answer.stopReason).to.equal('tool_calls');
  });

  it('gives onText growing snapshots of an Anthropic answer, tool uses and usage kept', async () => {
    fake.script([{ ...anthropicToolUse([{ id: 't1', name: 'lookup', input: { q: 'y' } }], 'abc', { input: 9, output: 6 }), chunks: ['a', 'bc'] }]);
    const seen: string[] = [];
    const answer = await callAnthropic(call(fake.anthropicBaseUrl, (t) => seen.push(t)));
    expect(seen).to.deep.equal(['a', 'abc']);
    expect(answer).to.deep.equal({ text: 'abc', toolCalls: [{ id: 't1', name: 'lookup', arguments: { q: 'y' } }], usage: { input: 9, output: 6 }, stopReason: 'tool_use', model: 'fake' });
    expect(fake.requests[0]!.body).to.include({ stream: true });
  });

  it('sends no stream field when no onText is given', async () => {
    fake.script([openaiText('plain'), anthropicText('plain')]);
    expect((await callOpenAI(call(fake.openaiBaseUrl))).text).to.equal('plain');
    expect((await callAnthropic(call(fake.anthropicBaseUrl))).text).to.equal('plain');
    expect(fake.requests.map((r) => r.body.stream)).to.deep.equal([undefined, undefined]);
  });

  it('fails retryably, the key redacted, when a stream is cut mid-answer', async () => {
    fake.script([{ ...openaiText('abcdef'), chunks: ['ab', 'cd', 'ef'], cutAfterChunks: 2 }]);
    const err = await callOpenAI(call(fake.openaiBaseUrl, () => {})).then(
      () => null,
      (e: { type?: string; nonRetryable?: boolean; message: string }) => e,
    );
    expect(err?.type).to.be.oneOf(['ProviderUnreachable', 'ProviderUnavailable']);
    expect(err?.nonRetryable).to.not.equal(true);
    expect(err?.message).to.not.include('sk-secret-key-1234');
  });

  it('takes the plain JSON answer of an endpoint that does not stream as the answer, and streams to it no more', async () => {
    for (const [provider, baseURL, reply] of [
      ['openai', `${fake.url}/plain-openai/v1`, openaiText('whole', { input: 2, output: 1 })],
      ['anthropic', `${fake.url}/plain-anthropic`, anthropicText('whole', { input: 2, output: 1 })],
    ] as const) {
      fake.reset();
      fake.script([{ ...reply, noStream: true }, { ...reply, noStream: true }, { ...reply, noStream: true }]);
      const seen: string[] = [];
      const run = provider === 'openai' ? callOpenAI : callAnthropic;
      const answer = await run(call(baseURL, (t) => seen.push(t)));
      expect(answer).to.include({ text: 'whole' });
      expect(answer.usage).to.deep.equal({ input: 2, output: 1 });
      expect(seen.join('')).to.be.oneOf(['', 'whole']);
      await run(call(baseURL, (t) => seen.push(t)));
      // The plain answer is the first call's (the model is not asked twice); the second call does not stream.
      expect(fake.requests.map((r) => r.body.stream)).to.deep.equal([true, undefined]);
    }
  });
  it('fails a plain answer that is no answer as malformed, once, and keeps streaming to that endpoint', async () => {
    for (const [provider, baseURL, reply] of [
      ['openai', `${fake.url}/bad-plain-openai/v1`, openaiText('fine')],
      ['anthropic', `${fake.url}/bad-plain-anthropic`, anthropicText('fine')],
    ] as const) {
      fake.reset();
      fake.script([{ raw: 'this is not json' }, { body: { nothing: 'here' } }, reply]);
      const run = provider === 'openai' ? callOpenAI : callAnthropic;
      for (let i = 0; i < 2; i++) {
        const err = await run(call(baseURL, () => {})).then(
          () => null,
          (e: { type?: string; message: string }) => e,
        );
        expect(err?.type, provider).to.equal('ProviderMalformedAnswer');
        expect(err?.message).to.include(`${provider} sent a malformed answer`);
      }
      expect((await run(call(baseURL, () => {}))).text).to.equal('fine');
      expect(fake.requests.map((r) => r.body.stream), 'each asked once, every one streaming').to.deep.equal([true, true, true]);
    }
  });
});
