import { Metadata, status } from '@grpc/grpc-js';
import { ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { expect } from 'chai';
import mongoose from 'mongoose';
import { unavailableDependency } from '../../src/dependencies';
import { isDuplicateKey } from '../../src/store/connect';

const { mongo } = mongoose;
/** A gRPC error as @grpc/grpc-js makes it (code, details, metadata), which the SDK's isGrpcServiceError recognises. */
const grpc = (code: number) => Object.assign(new Error(`${code} gRPC error`), { code, details: 'gRPC error', metadata: new Metadata() });
/** A driver error the driver does not export the class of (its name is what the driver sets). */
const named = (name: string) => Object.assign(new Error(name), { name });

describe('which dependency an error says did not answer', () => {
  it('names MongoDB for the driver\'s network, timeout, pool and selection errors, and for a cause among them', () => {
    const errors: Error[] = [
      new mongo.MongoNetworkError('reset'),
      new mongo.MongoNetworkTimeoutError('timed out'),
      new mongo.MongoServerSelectionError('no server', new mongo.MongoNetworkError('x') as never),
      new mongoose.Error.MongooseServerSelectionError('no server'),
      new mongo.MongoOperationTimeoutError('timeoutMS'),
      new mongo.MongoTopologyClosedError(),
      new mongo.MongoNotConnectedError('not connected'),
      named('MongoWaitQueueTimeoutError'),
    ];
    for (const err of errors) expect(unavailableDependency(err), err.name).to.equal('mongodb');
    expect(unavailableDependency(new Error('bulk', { cause: new mongo.MongoNetworkTimeoutError('x') }))).to.equal('mongodb');
    expect(unavailableDependency(new mongoose.Error('Operation `runs.findOne()` buffering timed out after 3000ms'))).to.equal('mongodb');
    // FerretDB's SQLite busy error has no class of its own: a server error told by its message.
    expect(unavailableDependency(new mongo.MongoServerError({ message: 'database is locked (SQLITE_BUSY)' }))).to.equal('mongodb');
  });

  it('names Temporal for gRPC deadlines, unavailability, exhaustion, cancellation and reset streams, as the SDK wraps them', () => {
    for (const code of [status.CANCELLED, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED, status.UNAVAILABLE, status.INTERNAL]) {
      expect(unavailableDependency(new ServiceError('call failed', { cause: grpc(code) })), `code ${code}`).to.equal('temporal');
      expect(unavailableDependency(grpc(code)), `bare code ${code}`).to.equal('temporal');
    }
  });

  it('names Temporal for a gRPC error down the cause chain: an approval\'s update not accepted within its deadline', () => {
    // As WorkflowClient.rethrowUpdateGrpcError throws it for an update whose RPC ran past its deadline.
    for (const code of [status.CANCELLED, status.DEADLINE_EXCEEDED]) {
      expect(unavailableDependency(new WorkflowUpdateRPCTimeoutOrCancelledError('Deadline exceeded', { cause: grpc(code) })), `code ${code}`).to.equal('temporal');
    }
    const wrapped = new Error('the decision could not be sent', { cause: new WorkflowUpdateRPCTimeoutOrCancelledError('x', { cause: new ServiceError('y', { cause: grpc(status.UNAVAILABLE) }) }) });
    expect(unavailableDependency(wrapped)).to.equal('temporal');
    expect(unavailableDependency(new WorkflowUpdateRPCTimeoutOrCancelledError('x', { cause: grpc(status.INVALID_ARGUMENT) }))).to.equal(undefined);
    expect(unavailableDependency(new Error('x', { cause: 'not an object' }))).to.equal(undefined);
  });

  it('names none for anything else: an error that only looks like a gRPC or driver error by its name is not one', () => {
    expect(unavailableDependency(new ServiceError('bad', { cause: grpc(status.INVALID_ARGUMENT) }))).to.equal(undefined);
    expect(unavailableDependency(named('MongoNetworkError'))).to.equal(undefined);
    expect(unavailableDependency(Object.assign(new Error('x'), { code: status.UNAVAILABLE }))).to.equal(undefined);
    expect(unavailableDependency(new mongo.MongoServerError({ message: 'E11000 duplicate key', code: 11000 }))).to.equal(undefined);
    expect(unavailableDependency(new TypeError('x is undefined'))).to.equal(undefined);
    expect(unavailableDependency(null)).to.equal(undefined);
  });
});

describe('a duplicate key', () => {
  it('is the server\'s E11000, from a single write or a bulk one, and nothing else with that code', () => {
    expect(isDuplicateKey(new mongo.MongoServerError({ message: 'E11000 duplicate key', code: 11000 }))).to.equal(true);
    expect(isDuplicateKey(new mongo.MongoServerError({ message: 'other', code: 2 }))).to.equal(false);
    expect(isDuplicateKey(Object.assign(new Error('x'), { code: 11000 }))).to.equal(false);
    expect(isDuplicateKey(null)).to.equal(false);
  });
});
