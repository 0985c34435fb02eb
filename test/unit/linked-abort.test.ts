import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { linkedAbort } from '../../activities/linked-abort';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** `n` calls' signals, each given a listener that is never removed, each call released: weak references to them. */
function calls(source: AbortSignal, n: number): Array<WeakRef<AbortSignal>> {
  const refs: Array<WeakRef<AbortSignal>> = [];
  for (let i = 0; i < n; i++) {
    const { signal, release } = linkedAbort([source], 60_000);
    signal.addEventListener('abort', () => undefined, { once: true });
    refs.push(new WeakRef(signal));
    release();
  }
  return refs;
}

describe('a call’s linked abort signal', () => {
  it('aborts with a source, with its reason', () => {
    const [a, b] = [new AbortController(), new AbortController()];
    const { signal } = linkedAbort([a.signal, b.signal]);
    expect(signal.aborted).to.equal(false);
    b.abort(new Error('run cancelled'));
    expect(signal.aborted).to.equal(true);
    expect((signal.reason as Error).message).to.equal('run cancelled');
  });

  it('aborts when told to, with an AbortError', () => {
    const call = linkedAbort([new AbortController().signal]);
    call.abort();
    expect((call.signal.reason as DOMException).name).to.equal('AbortError');
  });

  it('is aborted at once when a source already is', () => {
    const a = new AbortController();
    a.abort('gone');
    expect(linkedAbort([new AbortController().signal, a.signal]).signal.reason).to.equal('gone');
  });

  it('aborts with a TimeoutError at its deadline, and not once released', async () => {
    const timed = linkedAbort([], 20);
    const released = linkedAbort([], 20);
    released.release();
    await new Promise((r) => setTimeout(r, 60));
    expect((timed.signal.reason as DOMException).name).to.equal('TimeoutError');
    expect(released.signal.aborted).to.equal(false);
  });

  it('leaves no listener on its sources once released', () => {
    const source = new AbortController();
    const calls = Array.from({ length: 3 }, () => linkedAbort([source.signal]));
    expect(getEventListeners(source.signal, 'abort')).to.have.length(3);
    for (const c of calls) c.release();
    expect(getEventListeners(source.signal, 'abort')).to.have.length(0);
    source.abort();
    expect(calls.every((c) => !c.signal.aborted)).to.equal(true);
  });

  it('is collected after its call, though a library left its own abort listener on it (as the OpenAI SDK does)', async () => {
    // A long-lived source, like an activity's cancellation signal.
    const source = new AbortController();
    const refs = calls(source.signal, 100);
    // WeakRefs hold until the current job ends; then collect.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined), 'signals still reachable').to.have.length(0);
  });
});
