import { expect } from 'chai';
import { until } from '../helpers/runs';
import { trigger, triggerUntilAccepted } from './client';
import { expectAllEndOnce, runsOf } from './runs';
import { faultStack, faultTask, faultUser } from './harness';
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

    await faultStack().api.kill();
    ledger.fault('api SIGKILL');
    // Clients keep calling while no API listens: no answer at all, and nothing recorded.
    const during = ['a-d-0', 'a-d-1', 'a-d-2'];
    for (const name of during) {
      const attempt = await trigger(url, `echo ${name}`, name).then(
        (res) => `answered ${res.status}`,
        () => 'refused',
      );
      expect(attempt, name).to.equal('refused');
    }
    // The runs go on without the API, and end while it is down.
    script.open('api');
    await until('the runs in flight to answer', () => script.waiting('api') === 0, 30_000);
    await new Promise((r) => setTimeout(r, 2_000));
    await faultStack().api.start();

    for (const name of during) expect((await triggerUntilAccepted(url, `echo ${name}`, name)).status, name).to.equal(201);
    await expectAllEndOnce(runsOf('api'), 120_000);
  });
});
