import { expect } from 'chai';
import { checkProblem, checkSchema, runCheck, sameAnswer } from '../../src/evals/checks';
import { median, scorecard } from '../../src/evals/scorecard';
import { scorecardLines } from '../../src/cli/ptr/evals';

describe('evals: checks', () => {
  it('passes contains when the answer holds the value, ignoring case only when told', () => {
    expect(runCheck({ type: 'contains', value: 'Paris' }, 'It is Paris.', null).passed).to.equal(true);
    expect(runCheck({ type: 'contains', value: 'paris' }, 'It is Paris.', null).passed).to.equal(false);
    expect(runCheck({ type: 'contains', value: 'paris', case_sensitive: false }, 'It is Paris.', null).passed).to.equal(true);
  });

  it('fails every check of a run without an answer', () => {
    const r = runCheck({ type: 'contains', value: 'x' }, null, 'x');
    expect(r).to.deep.equal({ type: 'contains', passed: false, reason: 'the run has no answer' });
  });

  it('runs regex checks with their flags', () => {
    expect(runCheck({ type: 'regex', pattern: '^\\d+ apples$' }, '12 apples', null).passed).to.equal(true);
    expect(runCheck({ type: 'regex', pattern: 'APPLES', flags: 'i' }, '12 apples', null).passed).to.equal(true);
    expect(runCheck({ type: 'regex', pattern: 'pears' }, '12 apples', null).passed).to.equal(false);
  });

  it('fails a catastrophic pattern within its time limit instead of stalling', () => {
    const started = Date.now();
    const r = runCheck({ type: 'regex', pattern: '^(a+)+$' }, `${'a'.repeat(40)}!`, null);
    expect(r.passed).to.equal(false);
    expect(r.reason).to.match(/longer than 100 ms/);
    expect(Date.now() - started).to.be.below(2_000);
  });

  it('says an invalid pattern is a problem of the check', () => {
    expect(checkProblem({ type: 'regex', pattern: '(' })).to.match(/^pattern: /);
    expect(checkProblem({ type: 'regex', pattern: 'a+' })).to.equal(undefined);
  });

  it('checks a JSON answer against a schema, and fails an answer that is not JSON', () => {
    const schema = { type: 'object', required: ['city'], properties: { city: { type: 'string' } } };
    expect(runCheck({ type: 'json_schema', schema }, '{"city":"Paris"}', null).passed).to.equal(true);
    expect(runCheck({ type: 'json_schema', schema }, '{"town":"Paris"}', null).passed).to.equal(false);
    expect(runCheck({ type: 'json_schema', schema }, 'Paris', null).reason).to.equal('the answer is not JSON');
    expect(checkProblem({ type: 'json_schema', schema: { type: 'nope' } })).to.match(/^schema: /);
  });

  it('compares with the original after trimming, and JSON answers canonically', () => {
    expect(sameAnswer(' yes\n', 'yes')).to.equal(true);
    expect(sameAnswer('{"a":1,"b":[2]}', '{ "b": [2], "a": 1 }')).to.equal(true);
    expect(sameAnswer('{"a":1}', '{"a":2}')).to.equal(false);
    expect(runCheck({ type: 'same_as_original' }, 'x', null).passed).to.equal(false);
  });

  it('refuses unknown check types and fields by schema', () => {
    expect(checkSchema.safeParse({ type: 'equals', value: 'x' }).success).to.equal(false);
    expect(checkSchema.safeParse({ type: 'contains', value: 'x', extra: 1 }).success).to.equal(false);
    expect(checkSchema.safeParse({ type: 'regex', pattern: 'x', flags: 'g' }).success).to.equal(false);
  });
});

describe('evals: the scorecard', () => {
  it('counts runs done, checks passed, tokens and the median duration per variant', () => {
    const pass = { type: 'contains' as const, passed: true };
    const fail = { type: 'contains' as const, passed: false, reason: 'no' };
    const card = scorecard(['a', 'b'], [
      { variant: 'a', run: 'e.a.1', status: 'ready', checks: [pass, pass], tokens: 10, duration_ms: 300, diff_url: 'u1' },
      { variant: 'a', run: 'e.a.2', status: 'ready', checks: [pass, fail], tokens: 5, duration_ms: 100, diff_url: 'u2' },
      { variant: 'a', run: 'e.a.3', status: 'running', checks: [], tokens: 1, diff_url: 'u3' },
      { variant: 'b', run: 'e.b.1', status: 'error', checks: [fail], tokens: 0, duration_ms: 50, diff_url: 'u4' },
    ]);
    expect(card[0]).to.deep.include({ name: 'a', runs: { done: 2, total: 3 }, checks: { passed: 3, total: 4 }, tokens: 16, p50_duration_ms: 100 });
    expect(card[0]!.diffs.map((d) => d.diff_url)).to.deep.equal(['u1', 'u2', 'u3']);
    expect(card[1]).to.deep.include({ runs: { done: 1, total: 1 }, checks: { passed: 0, total: 1 }, p50_duration_ms: 50 });
  });

  it('takes the lower middle as the median of an even count', () => {
    expect(median([4, 1, 3, 2])).to.equal(2);
    expect(median([])).to.equal(null);
  });
});

describe('evals: ptr eval\'s scorecard table', () => {
  it('prints a row per variant: runs done, checks passed, share, tokens and median duration', () => {
    const lines = scorecardLines({
      id: 'e1',
      status: 'ready',
      runs: 2,
      tools: 'recorded',
      created_at: '2026-11-28T10:00:00.000Z',
      scorecard: [
        { name: 'mini', runs: { done: 2, total: 2 }, checks: { passed: 3, total: 4 }, tokens: 120, p50_duration_ms: 1500, diffs: [] },
        { name: 'big', runs: { done: 1, total: 2 }, checks: { passed: 0, total: 0 }, tokens: 0, p50_duration_ms: null, diffs: [] },
      ],
    });
    expect(lines).to.deep.equal([
      'eval e1: ready, 2 runs, tools recorded, created 2026-11-28 10:00:00',
      'VARIANT  RUNS  CHECKS  PASSED  TOKENS  P50',
      'mini     2/2   3/4     75%     120     1.5s',
      'big      1/2   0/0     -       0       -',
    ]);
  });
});
