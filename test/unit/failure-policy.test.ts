import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { expect } from 'chai';
import { withFailurePolicy } from '../../activities/failure-guard';
import { createLogger } from '../../src/logger';
import { FAILURES, internalReason, readFailure, runFailure } from '../../src/contract/failures';
import { LogSink } from '../helpers/log-sink';

const asActivityFailure = (cause: Error) => new ActivityFailure('activity failed', 'callModel', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, cause);

describe('the failure policy', () => {
  it('lets listed failures and cancellations through as they are', async () => {
    const logs = new LogSink();
    const listed = runFailure('ProviderRejected', 'openai answered 401: bad key');
    const cancelled = new CancelledFailure('cancelled');
    const guarded = withFailurePolicy(createLogger({ level: 'debug', name: 'test', destination: logs }), {}, {
      listed: async () => { throw listed; },
      cancelled: async () => { throw cancelled; },
    });
    expect(await guarded.listed().catch((e) => e)).to.equal(listed);
    expect(await guarded.cancelled().catch((e) => e)).to.equal(cancelled);
    expect(logs.lines).to.have.length(0);
  });

  it('turns any other failure into a generic Internal one, and logs what it was', async () => {
    const logs = new LogSink();
    const guarded = withFailurePolicy(createLogger({ level: 'debug', name: 'test', destination: logs }), { prepareRun: 'preparing the run' }, {
      prepareRun: async () => { throw new Error('MongoServerError: E11000 duplicate key in ptr.task_versions (internal detail)'); },
      unknownType: async () => { throw ApplicationFailure.nonRetryable('a type nobody listed', 'Mystery'); },
    });
    const failure = await guarded.prepareRun().catch((e) => e);
    expect(failure).to.be.instanceOf(ApplicationFailure);
    expect(failure.type).to.equal('Internal');
    expect(failure.nonRetryable, 'the activity\'s retry policy decides').to.equal(false);
    expect(failure.message).to.equal(internalReason('preparing the run'));
    expect(failure.message).not.to.contain('E11000');
    expect(logs.text()).to.contain('E11000 duplicate key');
    expect((await guarded.unknownType().catch((e) => e)).type).to.equal('Internal');
  });

  it('reads each listed failure with the retry its list entry gives, and its message as the reason', () => {
    for (const type of Object.keys(FAILURES) as Array<keyof typeof FAILURES>) {
      const reading = readFailure(asActivityFailure(runFailure(type, `reason of ${type}`, { retryAfterMs: 1500 })), { name: 'the provider call', kind: 'provider' });
      expect(reading, type).to.deep.equal({ retryable: FAILURES[type].retryable, reason: `reason of ${type}`, retryAfterMs: 1500 });
    }
  });

  it('shows an unlisted failure only as a generic reason, and a timeout in words', () => {
    const leaky = ApplicationFailure.nonRetryable('connection refused to mongodb://admin:pw@10.0.0.5', 'MongoNetworkError');
    expect(readFailure(asActivityFailure(leaky), { name: 'the run', kind: 'other' })).to.deep.equal({ retryable: false, reason: internalReason('the run') });
    expect(readFailure(new Error('TypeError: x is undefined'), { name: 'the run', kind: 'other' }).reason).to.equal(internalReason('the run'));
    const heartbeat = asActivityFailure(new TimeoutFailure('timed out', undefined, TimeoutType.HEARTBEAT));
    expect(readFailure(heartbeat, { name: 'the provider call', kind: 'provider' })).to.deep.equal({ retryable: true, reason: 'the worker calling the provider was lost' });
    const slowTool = asActivityFailure(new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE));
    expect(readFailure(slowTool, { name: 'tool greet', kind: 'tool' }).reason).to.equal('tool greet timed out');
  });
});
