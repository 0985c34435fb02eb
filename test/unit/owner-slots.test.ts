import { ApplicationFailure } from '@temporalio/common';
import { expect } from 'chai';
import { isOwnerBusy } from '../../src/contract/failures';
import { OwnerSlots } from '../../src/temporal/owner-slots';

/** A call that ends when the test says: `answer` or `fail` it. */
function heldCall() {
  let answer!: (value: string) => void;
  let fail!: (err: Error) => void;
  const ended = new Promise<string>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  return { work: () => ended, answer, fail };
}

describe('an owner\'s provider-call slots on a worker (src/temporal/owner-slots.ts)', () => {
  it('lets an owner hold its cap of calls and refuses the next with a retryable OwnerBusy, without starting it', async () => {
    let refused = 0;
    const slots = new OwnerSlots(2, () => refused++);
    const a = heldCall();
    const b = heldCall();
    const first = slots.hold('alice', a.work);
    const second = slots.hold('alice', b.work);
    expect(slots.heldBy('alice')).to.equal(2);
    let started = false;
    const err = await slots
      .hold('alice', async () => {
        started = true;
        return 'never';
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isOwnerBusy(err), String(err)).to.equal(true);
    expect((err as ApplicationFailure).nonRetryable).to.equal(false);
    expect(started, 'the refused call never started').to.equal(false);
    expect(refused).to.equal(1);
    expect(slots.heldBy('alice'), 'a refusal takes no slot').to.equal(2);
    a.answer('one');
    b.answer('two');
    expect(await first).to.equal('one');
    expect(await second).to.equal('two');
  });

  it('frees a slot when its call ends, whether it answered or failed', async () => {
    const slots = new OwnerSlots(1);
    const answered = heldCall();
    const held = slots.hold('alice', answered.work);
    answered.answer('done');
    await held;
    expect(slots.heldBy('alice')).to.equal(0);
    const failing = heldCall();
    const failed = slots.hold('alice', failing.work);
    expect(slots.heldBy('alice')).to.equal(1);
    failing.fail(new Error('provider down'));
    const err = await failed.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('provider down');
    expect(slots.heldBy('alice')).to.equal(0);
    expect(await slots.hold('alice', async () => 'again'), 'the freed slot takes the next call').to.equal('again');
  });

  it('counts each owner apart: one owner at its cap does not hold back another', async () => {
    const slots = new OwnerSlots(1);
    const alice = heldCall();
    const held = slots.hold('alice', alice.work);
    expect(await slots.hold('bob', async () => 'bob answered')).to.equal('bob answered');
    expect(slots.heldBy('bob')).to.equal(0);
    alice.answer('alice answered');
    expect(await held).to.equal('alice answered');
  });
});
