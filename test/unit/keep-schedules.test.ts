import { expect } from 'chai';
import { createLogger } from '../../src/logger';
import { keepSchedules } from '../../src/temporal/schedules';
import { LogSink } from '../helpers/log-sink';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the housekeeping Schedules at a worker start', () => {
  const timing = { tries: 3, firstDelayMs: 10, retryMs: 30 };

  it('settles once making sure succeeds, trying again after a failure, and logs each failure', async () => {
    const logs = new LogSink();
    let calls = 0;
    const kept = keepSchedules(async () => {
      calls++;
      if (calls < 3) throw new Error('Failed to describe schedule');
    }, createLogger({ level: 'info', name: 't', destination: logs }), timing);
    await kept.settled;
    expect(calls).to.equal(3);
    expect(logs.lines.filter((l) => l.includes('housekeeping Schedules'))).to.have.length(2);
    expect(logs.text()).to.include('Failed to describe schedule');
  });

  it('lets the worker start when the Schedules cannot be made, and keeps trying in the background until stopped', async () => {
    const logs = new LogSink();
    let calls = 0;
    let healthy = false;
    const kept = keepSchedules(async () => {
      calls++;
      if (!healthy) throw new Error('Temporal is busy');
    }, createLogger({ level: 'info', name: 't', destination: logs }), timing);
    await kept.settled;
    expect(calls, 'settled after its foreground tries').to.equal(3);
    await sleep(100);
    expect(calls, 'still trying in the background').to.be.greaterThan(3);
    healthy = true;
    await sleep(100);
    const done = calls;
    await sleep(100);
    expect(calls, 'stops trying once it succeeded').to.equal(done);
    kept.stop();
  });

  it('stops trying when stopped', async () => {
    let calls = 0;
    const kept = keepSchedules(async () => {
      calls++;
      throw new Error('down');
    }, createLogger({ level: 'silent', name: 't' }), timing);
    await kept.settled;
    kept.stop();
    const at = calls;
    await sleep(100);
    expect(calls).to.equal(at);
  });
});
