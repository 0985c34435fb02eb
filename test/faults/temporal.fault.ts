import { expect } from 'chai';
import { until } from '../helpers/runs';
import { countedFetch, expectPrompt, trigger, workflowIdOf, type CountingApi, type TimedResponse } from './client';
import { dependencyFault, type Dependency } from './dependency';
import { faultStack } from './harness';
import { ledger } from './ledger';

/**
 * What issue 12 asks of the API while Temporal does not answer, each answer within DEPENDENCY_TIMEOUT_MS and a margin:
 * live runs read from their records (`Run-Source: record`), /readyz naming Temporal, and a trigger answered 503
 * `temporal_unavailable` naming the run it recorded, which the reconciler starts once Temporal is back, whether or
 * not the caller retries.
 */
async function expectTemporalDown(api: CountingApi, url: string, liveRun: string, during: string) {
  const reads: TimedResponse[] = [];
  const live = await until(
    'a read from the record',
    async () => {
      const read = await api.get(liveRun);
      reads.push(read);
      return read.headers.get('run-source') === 'record' && read;
    },
    15_000,
  );
  expect(live.status).to.equal(200);
  expect(live.body.status).to.be.oneOf(['running', 'pending']);
  const ready = await countedFetch(`${faultStack().apiUrl}/readyz`);
  expect(ready.status).to.equal(503);
  expect(ready.body).to.deep.include({ mongodb: 'ok' }).and.not.include({ temporal: 'ok' });
  const triggered = await trigger(url, `echo ${during}`, during);
  expect(triggered.status, triggered.text).to.equal(503);
  expect(triggered.headers.get('retry-after')).to.equal('1');
  expect(triggered.body.error).to.deep.include({ code: 'temporal_unavailable', run: during });
  // Recorded: nobody retries it; it must run anyway.
  ledger.accept({ url: triggered.body.error.url, workflowId: workflowIdOf(triggered.body.error.url), expect: { status: 'ready' } });
  expectPrompt(...reads.map((read, i): [string, TimedResponse] => [`a live run (read ${i + 1})`, read]), ['/readyz', ready], ['a trigger', triggered]);
}

/**
 * Temporal: the held calls answer only once the API's answers are checked (a run whose end the worker recorded would
 * no longer read as live). The run recorded by the trigger answered 503 is started by the reconciler with no retry;
 * once the runs have ended, a trigger of its name is answered for it (200).
 */
const TEMPORAL: Dependency = {
  name: 'temporal',
  prefix: 'tp',
  server: (stack) => stack.temporal,
  answerHeld: 'after the checks',
  expectDown: expectTemporalDown,
  retrigger: {
    when: 'after the runs end',
    check: async (url, during) => {
      expect((await trigger(url, `echo ${during}`, during)).status, 'the recorded run answers for its name').to.equal(200);
    },
  },
  endTimeoutMs: 180_000,
};

describe('faults: Temporal stalls and restarts', () => {
  dependencyFault(TEMPORAL, 'stall');
  dependencyFault(TEMPORAL, 'restart');
});
