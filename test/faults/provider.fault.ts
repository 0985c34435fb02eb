import { expect } from 'chai';
import { trigger } from './client';
import { expectAllEndOnce, runsOf } from './runs';
import { faultStack, faultTask, faultUser } from './harness';
import { ledger, type RunExpectation } from './ledger';

/** What each provider fault must lead to (docs/runs.md, "Failures"), the run's text mode first. */
const CASES: Array<[mode: string, expectation: RunExpectation]> = [
  ['slow:2500', { status: 'ready' }],
  ['hang-once', { status: 'ready' }],
  ['429-once:2', { status: 'ready' }],
  ['429-always:1', { status: 'error', reason: /answered 429.*gave up after 10 attempts/ }],
  ['close-once', { status: 'ready' }],
  ['cut-once', { status: 'ready' }],
  ['garbage', { status: 'error', reason: /sent a malformed answer/ }],
  // The provider's message quotes the key; the final scan finds it nowhere (activities/providers/errors.ts scrub()).
  ['401-echo', { status: 'error', reason: /answered 401/ }],
];

describe('faults: the model provider misbehaves', () => {
  before(() => (ledger.scenario = 'provider'));

  it('ends every run once whether the provider is slow, times out, answers 429 with retry-after, drops the connection or sends garbage', async () => {
    const { api } = await faultUser('prov');
    const urls = { openai: await faultTask(api, 'prov-openai'), anthropic: await faultTask(api, 'prov-claude', { runner: 'anthropic', key: 'operator' }) };
    const triggers = CASES.flatMap(([mode, expectation]) =>
      (['openai', 'anthropic'] as const).map(async (runner) => {
        const name = `p-${mode.replace(':', '-')}-${runner}`;
        const res = await trigger(urls[runner], `${mode} ${name}`, name, expectation);
        expect(res.status, res.text).to.equal(201);
      }),
    );
    await Promise.all(triggers);
    const closed = await expectAllEndOnce(runsOf('provider'), 150_000);
    const { script } = faultStack();
    const entries = (name: string) => [...closed.entries()].find(([id]) => id.endsWith(`/${name}`))![1].results.map((e: any) => e.msg) as string[];
    const problems: string[] = [];
    const check = (ok: boolean, what: string) => void (ok || problems.push(what));
    for (const runner of ['openai', 'anthropic']) {
      const retried = entries(`p-429-once-2-${runner}`);
      // Retry-After (2 s) wins over the first backoff (0.2 s).
      check(retried.some((m) => /answered 429.*retrying in 2\.0 s/.test(m)), `${runner}: Retry-After: 2 not honoured: ${retried.join(' | ')}`);
      const timedOut = entries(`p-hang-once-${runner}`);
      check(timedOut.some((m) => /timed out|aborted/.test(m)), `${runner}: no timeout entry: ${timedOut.join(' | ')}`);
      check(script.calls(`p-slow-2500-${runner}`) === 1, `${runner}: a slow answer was not waited for (${script.calls(`p-slow-2500-${runner}`)} calls)`);
      check(script.calls(`p-garbage-${runner}`) === 1, `${runner}: garbage was retried (${script.calls(`p-garbage-${runner}`)} calls)`);
      for (const mode of ['close-once', 'cut-once', 'hang-once']) check(script.calls(`p-${mode}-${runner}`) === 2, `${runner}: ${mode} took ${script.calls(`p-${mode}-${runner}`)} calls, not 2`);
      check(script.calls(`p-429-always-1-${runner}`) === 10, `${runner}: 429-always took ${script.calls(`p-429-always-1-${runner}`)} calls, not PROVIDER_MAX_ATTEMPTS`);
      check(script.calls(`p-401-echo-${runner}`) === 1, `${runner}: a 401 was retried (${script.calls(`p-401-echo-${runner}`)} calls)`);
      const echoed = script.echoed(`p-401-echo-${runner}`);
      check(ledger.secrets.some((s) => s.kind === 'provider key' && s.value === echoed), `${runner}: the 401 did not quote the key the call was made with`);
    }
    expect(problems).to.deep.equal([]);
  });
});
