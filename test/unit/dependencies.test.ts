import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { expect } from 'chai';
import { unavailableDependency } from '../../src/dependencies';

const named = (name: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...extra });

describe('which dependency an error says did not answer', () => {
  it('names MongoDB for the driver\'s network, timeout, pool and selection errors, and for a cause among them', () => {
    for (const name of ['MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoServerSelectionError', 'MongooseServerSelectionError', 'MongoWaitQueueTimeoutError', 'PoolClearedOnNetworkError', 'MongoPoolClearedError']) {
      expect(unavailableDependency(named(name)), name).to.equal('mongodb');
    }
    expect(unavailableDependency(named('MongoBulkWriteError', { cause: named('MongoNetworkTimeoutError') }))).to.equal('mongodb');
    expect(unavailableDependency(new Error('Operation `runs.findOne()` buffering timed out after 3000ms'))).to.equal('mongodb');
  });

  it('names Temporal for gRPC deadlines, unavailability, exhaustion and cancellation, as the SDK wraps them', () => {
    for (const code of [1, 4, 8, 14]) expect(unavailableDependency(named('ServiceError', { cause: { code } })), `code ${code}`).to.equal('temporal');
    expect(unavailableDependency(Object.assign(new Error('deadline'), { code: 4, details: 'Deadline exceeded' }))).to.equal('temporal');
  });

  it('names Temporal for a gRPC error down the cause chain: an approval\'s update not accepted within its deadline', () => {
    const grpc = (code: number) => Object.assign(new Error(`${code} gRPC error`), { code, details: 'gRPC error', metadata: {} });
    // As WorkflowClient.rethrowUpdateGrpcError throws it for an update whose RPC ran past its deadline.
    for (const code of [1, 4]) {
      expect(unavailableDependency(new WorkflowUpdateRPCTimeoutOrCancelledError('Deadline exceeded', { cause: grpc(code) })), `code ${code}`).to.equal('temporal');
    }
    const wrapped = new Error('the decision could not be sent', { cause: new WorkflowUpdateRPCTimeoutOrCancelledError('x', { cause: new ServiceError('y', { cause: grpc(14) }) }) });
    expect(unavailableDependency(wrapped)).to.equal('temporal');
    expect(unavailableDependency(new WorkflowUpdateRPCTimeoutOrCancelledError('x', { cause: grpc(3) }))).to.equal(undefined);
    expect(unavailableDependency(new Error('x', { cause: 'not an object' }))).to.equal(undefined);
  });

  it('names none for anything else', () => {
    expect(unavailableDependency(named('ServiceError', { cause: { code: 3 } }))).to.equal(undefined);
    expect(unavailableDependency(named('MongoServerError', { code: 11000 }))).to.equal(undefined);
    expect(unavailableDependency(new TypeError('x is undefined'))).to.equal(undefined);
    expect(unavailableDependency(null)).to.equal(undefined);
  });
});
