import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn, type Api } from '../helpers/api';
import { openaiText, openaiToolCall } from '../helpers/fake-provider';
import { installServlet } from '../helpers/servlets';
import { createTask, postSigned, signedUrl, until, waitForRun } from '../helpers/runs';

/** The approval a run waits for, once its record or live view shows it. */
async function pendingApproval(api: Api, path: string): Promise<{ id: string }> {
  return until('an approval entry', async () => {
    const run = (await api.get(path)).body;
    return run.status === 'pending' ? run.results.find((e: any) => e.approval)?.approval : undefined;
  });
}

describe('runs: decisions racing on one approval', () => {
  beforeEach(() => getStack().fake.reset());
  afterEach(() => getStack().fake.reset());

  it('answers 20 concurrent decisions with one 202 and 409s, also those landing as the run ends: never a 5xx', async () => {
    const { api, username } = await signedIn();
    const { fake } = getStack();
    await installServlet(api, username, 'greeter', 'hello');
    const gated = await api.post('/api/profiles/~/default/installations', { servlet_slug: `${username}/greeter`, name: 'hello', settings: { approval: '*' } });
    expect(gated.status, gated.text).to.equal(200);
    await createTask(api, 'default', 'race');
    for (let round = 0; round < 3; round++) {
      // The model answers at once after the tool: the run ends while the losing decisions are still arriving.
      fake.script([openaiToolCall([{ id: `c${round}`, name: 'hello__greet', arguments: { name: 'Ann' } }]), openaiText('done')]);
      const started = await postSigned(await signedUrl(api, 'default', 'race'), {}, { 'run-id': `r${round}` });
      expect(started.status, started.text).to.equal(201);
      const path = new URL(started.body.url).pathname;
      const { id } = await pendingApproval(api, path);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api.post(`${path}/approvals/${id}`, { approve: i % 2 === 0 })));
      const statuses = answers.map((a) => a.status);
      const codes = answers.filter((a) => a.status === 409).map((a) => a.body.error.code);
      expect(statuses.filter((s) => s === 202), `round ${round}: ${statuses.join(' ')}`).to.have.length(1);
      expect(statuses.filter((s) => s !== 202 && s !== 409), `round ${round}: ${getStack().logs.text().split('\n').filter((l) => l.includes('request failed')).join('\n')}`).to.deep.equal([]);
      expect(new Set(codes), `round ${round}`).to.satisfy((set: Set<string>) => [...set].every((c) => c === 'approval_decided' || c === 'run_closed'));
      const run = await waitForRun(api, started.body.url);
      expect(run.status, JSON.stringify(run.results)).to.equal('ready');
      expect(run.results.filter((e: any) => /^(approved|denied) by /.test(e.msg)), `round ${round}`).to.have.length(1);
    }
  });
});
