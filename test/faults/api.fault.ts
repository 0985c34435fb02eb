import { expect } from 'chai';
import { until } from '../helpers/runs';
import { trigger, triggerUntilAccepted } from './client';
import { expectAllEndOnce, runsOf } from './runs';
import { faultStack, faultTask, faultUser, temporalClient } from './harness';
import { ledger } from './ledger';

describe('faults: the API dies', () => {
  before(() => (ledger.scenario = 'api'));

  it('serves every run after the API is SIGKILLed and started again while runs are in flight', async function () {
    this.timeout(240_000);
    const { api } = await faultUser('api');
    const { script } = faultStack();
    const url = await faultTask(api, 'api-runs');
    const held = Array.from({ length: 8 }, (_, i) => `a-h-${i}`);
    const slow = Array.from({ length: 4 }, (_, i) => `a-s-${i}`);
    await Promise.all([
      ...held.map(async (name) => expect((await trigger(url, `hold:api ${name}`, name)).status).to.equal(201)),
      ...slow.map(async (name) => expect((await trigger(url, `slow:1500 ${name}`, name)).status).to.equal(201)),
    ]);
    await until('every held provider call in flight', () => script.waiting('api') === held.length, 60_000);

    const { api: apiProcess } = faultStack();
    await apiProcess.kill();
    ledger.fault('api SIGKILL');
    const during = ['a-d-0', 'a-d-1', 'a-d-2'];
    try {
      // Clients keep calling while no API listens: no answer at all, and nothing recorded.
      for (const name of during) {
        const attempt = await trigger(url, `echo ${name}`, name).then(
          (res) => `answered ${res.status}`,
          () => 'refused',
        );
        expect(attempt, name).to.equal('refused');
      }
      // The runs go on without the API, and end while it is down.
      script.open('api');
      const temporal = await temporalClient();
      const inFlight = runsOf('api').map((r) => r.workflowId);
      await until('every run in flight to end with no API', async () => (await Promise.all(inFlight.map(async (id) => (await temporal.workflow.getHandle(id).describe()).status.name !== 'RUNNING'))).every(Boolean), 60_000);
    } finally {
      script.open('api');
      if (!apiProcess.running) await apiProcess.start();
    }

    for (const name of during) expect((await triggerUntilAccepted(url, `echo ${name}`, name)).status, name).to.equal(201);
    await expectAllEndOnce(runsOf('api'), 120_000);
  });
});
