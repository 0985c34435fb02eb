import { expect } from 'chai';
import { canonicalKey, callKey } from '../../src/store/replay-tools';
import { buildRunDiff, pairCalls, type DiffCall } from '../../src/replays/diff';
import { NO_USAGE } from '../../src/contract/constants';

describe('replays: the matching key of a tool call', () => {
  it('is the same for arguments that differ only in key order, spacing and number spelling', () => {
    expect(canonicalKey('{"b": 1, "a": [1.0, "x"]}')).to.equal('{"a":[1,"x"],"b":1}');
    expect(canonicalKey('{"a":[1,"x"],"b":1}')).to.equal(canonicalKey('{ "b":1e0,"a":[ 1,"x" ] }'));
  });

  it('tells apart arguments that differ in a value, and keeps nested objects sorted too', () => {
    expect(canonicalKey('{"a":{"d":1,"c":2}}')).to.equal('{"a":{"c":2,"d":1}}');
    expect(canonicalKey('{"a":1}')).to.not.equal(canonicalKey('{"a":"1"}'));
  });

  it('is the raw text for arguments that are not JSON', () => {
    expect(canonicalKey('{not json')).to.equal('{not json');
    expect(canonicalKey('')).to.equal('');
  });

  it('gives short call keys that differ by tool for the same arguments', () => {
    const key = canonicalKey('{"q":"x"}');
    expect(callKey('a__t', key)).to.have.length(24);
    expect(callKey('a__t', key)).to.not.equal(callKey('b__t', key));
    expect(callKey('a__t', key)).to.equal(callKey('a__t', canonicalKey('{ "q" : "x" }')));
  });
});

describe('replays: the diff of a replay from its original', () => {
  const call = (tool: string, args: unknown, replayed?: boolean): DiffCall => ({ tool, arguments: args, ...(replayed !== undefined ? { replayed } : {}) });
  const side = (name: string, answer: string | null, calls: DiffCall[]) => ({ name, status: answer === null ? ('error' as const) : ('ready' as const), answer, usage: { ...NO_USAGE }, duration_ms: 5, calls });

  it('pairs calls of the same tool in order: same arguments, changed arguments, added and removed calls', () => {
    const before = [call('w__fetch', { url: 'a' }), call('w__fetch', { url: 'b' }), call('m__send', { to: 'x' })];
    const after = [call('w__fetch', { url: 'a' }, true), call('w__fetch', { url: 'c' }, false), call('g__greet', { name: 'A' }, false)];
    expect(pairCalls(before, after)).to.deep.equal([
      { change: 'same', tool: 'w__fetch', original_arguments: { url: 'a' }, replay_arguments: { url: 'a' }, replayed: true },
      { change: 'changed', tool: 'w__fetch', original_arguments: { url: 'b' }, replay_arguments: { url: 'c' }, replayed: false },
      { change: 'removed', tool: 'm__send', original_arguments: { to: 'x' } },
      { change: 'added', tool: 'g__greet', replay_arguments: { name: 'A' }, replayed: false },
    ]);
  });

  it('counts arguments equal when they are canonically equal', () => {
    expect(pairCalls([call('t', { a: 1, b: 2 })], [call('t', { b: 2, a: 1 })])[0]!.change).to.equal('same');
  });

  it('answers a unified diff of the answers, and the sides without their calls', () => {
    const diff = buildRunDiff(side('orig', 'one\ntwo', []), side('orig.r1', 'one\nthree', []));
    expect(diff.answer_diff).to.include('--- orig').and.include('+++ orig.r1').and.include('-two').and.include('+three').and.include(' one');
    expect(diff.original).to.deep.equal({ name: 'orig', status: 'ready', answer: 'one\ntwo', usage: NO_USAGE, duration_ms: 5 });
    expect(diff.tool_calls).to.deep.equal([]);
  });

  it('diffs a run without an answer as an empty text', () => {
    const diff = buildRunDiff(side('orig', null, []), side('orig.r1', 'now', []));
    expect(diff.original.answer).to.equal(null);
    expect(diff.answer_diff).to.include('+now');
  });
});
