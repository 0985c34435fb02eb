import { expect } from 'chai';
import { countedFetch, expectPrompt, trigger, triggerUntilAccepted, type CountingApi } from './client';
import { dependencyFault, type Dependency } from './dependency';
import { faultStack } from './harness';

/**
 * What issue 12 asks of the API while MongoDB does not answer, each answer within DEPENDENCY_TIMEOUT_MS and a margin:
 * a live run read from its workflow (the session is cached), 503 `mongodb_unavailable` with Retry-After for what only
 * MongoDB has, /readyz naming it, and a trigger answered 503 naming the run it may have recorded.
 */
async function expectMongoDown(api: CountingApi, url: string, liveRun: string, during: string) {
  const live = await api.get(liveRun);
  expect(live.status, live.text).to.equal(200);
  expect(live.headers.get('run-source')).to.equal('live');
  expect(live.body.status).to.be.oneOf(['running', 'pending']);
  const ready = await countedFetch(`${faultStack().apiUrl}/readyz`);
  expect(ready.status).to.equal(503);
  expect(ready.body).to.deep.include({ temporal: 'ok' }).and.not.include({ mongodb: 'ok' });
  const tasks = await api.get('/api/tasks/~/default');
  expect(tasks.status, tasks.text).to.equal(503);
  expect(tasks.headers.get('retry-after')).to.equal('1');
  expect(tasks.body.error.code).to.equal('mongodb_unavailable');
  const triggered = await trigger(url, `echo ${during}`, during);
  expect(triggered.status, triggered.text).to.equal(503);
  expect(triggered.body.error).to.deep.include({ code: 'mongodb_unavailable', run: during });
  expectPrompt(['a live run', live], ['/readyz', ready], ['the task list', tasks], ['a trigger', triggered]);
}

/**
 * MongoDB: the held calls answer at once, so the worker's writes of their ends meet it down. The trigger answered 503
 * may have recorded its run (the write may land once MongoDB answers): triggered again with the same name, it is
 * started (201) or answered for (200), once.
 */
const MONGODB: Dependency = {
  name: 'mongodb',
  prefix: 'mg',
  server: (stack) => stack.mongodb,
  answerHeld: 'at once',
  expectDown: expectMongoDown,
  retrigger: {
    when: 'before the runs end',
    check: async (url, during) => {
      expect((await triggerUntilAccepted(url, `echo ${during}`, during)).status).to.be.oneOf([200, 201]);
    },
  },
  endTimeoutMs: 120_000,
};

describe('faults: MongoDB stalls and restarts', () => {
  dependencyFault(MONGODB, 'stall');
  dependencyFault(MONGODB, 'restart');
});
