import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { api as apiFor, uniqueUser, type ApiResponse } from '../helpers/api';
import { lastUserText, openaiText } from '../helpers/fake-provider';
import { startOwnStack, type OwnStack } from '../helpers/own-stack';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { createSession } from '../../src/store/sessions';

describe('requests: one deadline each', function () {
  this.timeout(120_000);
  let own: OwnStack | undefined;

  afterEach(async () => {
    getStack().fake.reset();
    await own?.stop();
    own = undefined;
  });

  it('answers a task list, a trigger and a run read 503 naming MongoDB before a stall longer than their deadline ends', async () => {
    // A stall longer than a request's deadline and shorter than two DEPENDENCY_TIMEOUT_MS waits in a row.
    const dependencyMs = 2_000;
    const stallMs = 3_200;
    own = await startOwnStack({ DEPENDENCY_TIMEOUT_MS: String(dependencyMs), REQUEST_DEADLINE_MS: '2500', SESSION_CACHE_MS: '10000', RUN_RECORD_CACHE_MS: '0', TRIGGER_CACHE_MS: '0' });
    const { id } = await createSession(own.db.models, uniqueUser('deadline'), 24);
    const api = apiFor(id, own.apiUrl);
    await createTask(api, 'default', 't');
    getStack().fake.script((req) => openaiText(`echo: ${lastUserText(req)}`));
    const url = await signedUrl(api, 'default', 't');
    const done = await postSigned(url, { text: 'before' }, { 'run-id': 'before' });
    expect(done.status, done.text).to.equal(201);
    const runPath = new URL((await waitForRun(api, done.body.url)).url ?? done.body.url).pathname;
    // The session is cached (SESSION_CACHE_MS): what follows needs MongoDB for its own reads and writes.
    expect((await api.get('/api/tasks/~/default')).status).to.equal(200);

    own.stall('mongodb');
    let stalled = true;
    const resume = setTimeout(() => {
      own!.resume('mongodb');
      stalled = false;
    }, stallMs);
    const during = (request: Promise<ApiResponse>) => request.then((res) => ({ res, duringStall: stalled }));
    try {
      const answers = await Promise.all([
        during(api.get('/api/tasks/~/default')),
        during(postSigned(url, { text: 'during' }, { 'run-id': 'during' }) as Promise<ApiResponse>),
        during(api.get(runPath)),
      ]);
      for (const { res, duringStall } of answers) {
        expect(res.status, res.text).to.equal(503);
        expect(res.body.error.code).to.equal('mongodb_unavailable');
        expect(duringStall, `answered before the stall ended: ${res.text}`).to.equal(true);
      }
    } finally {
      clearTimeout(resume);
      own.resume('mongodb');
    }
  });
});
