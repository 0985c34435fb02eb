import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, signedIn, startApi } from '../helpers/api';
import { anthropicText, openaiToolCall, providerError } from '../helpers/fake-provider';
import { createTask, historyText, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { runWorkflowId } from '../../src/temporal/ids';

describe('runs: execution', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('retries provider 503s with backoff, showing pending while it waits, and ends ready', async () => {
    const { api } = await signedIn();
    const { fake, config } = getStack();
    await createTask(api, 'default', 'flaky');
    // The first answer comes after a second: polls see the entries the first call prepared before it fails.
    fake.script([
      async () => {
        await new Promise((r) => setTimeout(r, 1000));
        return providerError('openai', 503, 'overloaded');
      },
      providerError('openai', 503, 'overloaded'),
    ]);
    const res = await postSigned(await signedUrl(api, 'default', 'flaky'), { text: 'x' }, { 'run-id': 'r' });
    const path = new URL(res.body.url).pathname;
    const seen: string[] = [];
    /** The entries of the first poll that had any: the first model call prepared them before it failed. */
    let firstShown: unknown[] | undefined;
    for (;;) {
      const polled = await api.get(path);
      expect(polled.status).to.equal(200);
      if (!firstShown && polled.body.results?.length) firstShown = polled.body.results;
      if (seen.at(-1) !== polled.body.status) seen.push(polled.body.status);
      if (polled.body.status === 'ready' || polled.body.status === 'error') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen.at(-1)).to.equal('ready');
    expect(seen.slice(seen.indexOf('running'))).to.include('pending');
    expect(fake.requests).to.have.length(3);
    // The waits double: the initial backoff, then twice it.
    const [first, second, third] = fake.requests.map((r) => r.at);
    expect(second! - first!).to.be.at.least(config.PROVIDER_RETRY_INITIAL_MS);
    expect(third! - second!).to.be.at.least(2 * config.PROVIDER_RETRY_INITIAL_MS);
    const run = await waitForRun(api, res.body.url);
    const retries = run.results.filter((e: any) => /retrying in/.test(e.msg));
    expect(retries).to.have.length(2);
    expect(retries[0]).to.include({ level: 40 });
    expect(retries[0].msg).to.contain('openai answered 503');
    // Prepared again after the failed first call, the first entries are the very ones shown before: none changed or
    // came twice.
    expect(run.results.slice(0, firstShown!.length)).to.deep.equal(firstShown);
    expect(run.results.map((e: any) => e.msg).slice(0, 2)).to.deep.equal(['run started', 'prompt']);
    expect(run.results.filter((e: any) => e.msg === 'run started')).to.have.length(1);
  });

  it('fails at once with the provider message when the provider rejects the key, without leaking it', async () => {
    const { api } = await signedIn();
    const { fake } = getStack();
    const key = 'sk-live-abcdefghijklmnopqrstuvwxyz012345';
    await createTask(api, 'default', 'badkey', { key });
    fake.script([providerError('openai', 401, `Incorrect API key provided: ${key.slice(0, 6)}****${key.slice(-4)} and ${key}`)]);
    const res = await postSigned(await signedUrl(api, 'default', 'badkey'), { text: 'x' });
    const run = await waitForRun(api, res.body.url);
    expect(run.status).to.equal('error');
    const last = run.results.at(-1);
    expect(last.error).to.match(/^openai answered 401: Incorrect API key provided/);
    expect(last.lastMessage.content).to.equal(last.error);
    expect(JSON.stringify(run)).not.to.contain(key);
    expect(JSON.stringify(run)).not.to.contain(key.slice(-12));
    expect(fake.requests).to.have.length(1);
  });

  it('ends in error with a readable reason on a malformed provider answer, and the worker keeps working', async () => {
    const { api } = await signedIn();
    const { fake } = getStack();
    await createTask(api, 'default', 'garbled');
    const url = await signedUrl(api, 'default', 'garbled');
    for (const reply of [{ raw: 'this is not json' }, { body: { choices: [] } }]) {
      fake.script([reply]);
      const run = await waitForRun(api, (await postSigned(url, { text: 'x' })).body.url);
      expect(run.status).to.equal('error');
      expect(run.results.at(-1).error).to.match(/openai sent a malformed answer/);
    }
    const ok = await waitForRun(api, (await postSigned(url, { text: 'after' })).body.url);
    expect(ok.status).to.equal('ready');
  });

  it('runs an Anthropic task with the model, the default max_tokens and the key it was given', async () => {
    const { api } = await signedIn();
    const { fake, config } = getStack();
    await createTask(api, 'default', 'claude', { runner: 'anthropic', model: 'claude-test', key: 'sk-ant-test-0123456789' });
    fake.script([anthropicText('bonjour')]);
    const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'claude'), { text: 'x' })).body.url);
    expect(run.results.at(-1).lastMessage).to.deep.equal({ role: 'assistant', content: 'bonjour' });
    const req = fake.requests[0]!;
    expect(req.provider).to.equal('anthropic');
    expect(req.body).to.include({ model: 'claude-test', max_tokens: config.ANTHROPIC_MAX_TOKENS });
    expect(fake.requests).to.have.length(1);
    // The current Anthropic SDK sends the key as `Authorization: Bearer`, older ones as `x-api-key` (shared notes).
    const sent = req.headers['x-api-key'] ?? String(req.headers.authorization).replace(/^Bearer /, '');
    expect(sent).to.equal('sk-ant-test-0123456789');
  });

  it('ends in error when the run exceeds its time limit', async () => {
    const { sessionId } = await signedIn();
    const { fake } = getStack();
    const limited = await startApi({ RUN_TIMEOUT_MS: '2000' });
    try {
      const api = apiFor(sessionId, limited.url);
      await createTask(api, 'default', 'slow');
      fake.script(() => ({ hang: true }));
      const res = await postSigned(await signedUrl(api, 'default', 'slow'), { text: 'x' });
      const run = await waitForRun(apiFor(sessionId), res.body.url);
      expect(run.status).to.equal('error');
      expect(run.results.at(-1).error).to.equal('the run exceeded its time limit of 2 s');
    } finally {
      await limited.close();
    }
  });

  it('ends in error when the model keeps calling tools past the turn limit', async () => {
    const { sessionId } = await signedIn();
    const { fake } = getStack();
    const limited = await startApi({ RUN_MAX_TURNS: '2' });
    try {
      const api = apiFor(sessionId, limited.url);
      await createTask(api, 'default', 'loopy');
      fake.script(() => openaiToolCall([{ name: 'nothing__here', arguments: {} }]));
      const run = await waitForRun(api, (await postSigned(await signedUrl(api, 'default', 'loopy'), { text: 'x' })).body.url);
      expect(run.status).to.equal('error');
      expect(run.results.at(-1).error).to.equal('the run reached its turn limit of 2 model calls without a final answer');
      expect(fake.requests).to.have.length(2);
      const toolResults = run.results.filter((e: any) => e.exchange?.role === 'tool');
      expect(toolResults[0].exchange.content).to.equal('unknown tool "nothing__here"');
    } finally {
      await limited.close();
    }
  });

  it('never puts the provider key in workflow history, logs or results', async () => {
    const { api, username } = await signedIn();
    const { fake, temporal, logs } = getStack();
    const key = 'sk-secret-history-test-9f8e7d6c5b4a';
    await createTask(api, 'default', 'secret', { key });
    const res = await postSigned(await signedUrl(api, 'default', 'secret'), { text: 'x' }, { 'run-id': 's1' });
    const run = await waitForRun(api, res.body.url);
    expect(run.status).to.equal('ready');
    expect(fake.requests[0]!.headers.authorization).to.equal(`Bearer ${key}`);
    const history = await historyText(temporal, runWorkflowId({ owner: username, profile: 'default', task: 'secret', run: 's1' }));
    expect(history).to.contain('Say x'); // the history is readable: the check below means something
    expect(history).not.to.contain(key);
    expect(logs.text()).not.to.contain(key);
    expect(JSON.stringify(run)).not.to.contain(key);
  });
});
